! The logical marker of each file named on the command line, from Fortran: one line per file,
! "NAME: MARKER" ("NAME: " for plain numbers), through ra_file_logical and ra_fstr.
! tests/fortran.rs writes the files and compares the lines with the markers it wrote.
program logical_check
  use, intrinsic :: iso_c_binding
  use rawarray
  implicit none

  character(len=4096) :: path
  type(c_ptr) :: f, marker
  integer :: i

  do i = 1, command_argument_count()
    call get_command_argument(i, path)
    call check(ra_open(ra_cstr(path), f))
    call check(ra_file_logical(f, marker))
    print '(a)', trim(path) // ": " // ra_fstr(marker)
    call ra_close(f)
  end do

contains

  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= RA_OK) then
      print '(a)', "librawarray: " // ra_error_message()
      error stop 1
    end if
  end subroutine
end program
