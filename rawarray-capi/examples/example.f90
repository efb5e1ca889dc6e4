! librawarray from Fortran: write a 3-d real(4) array plain and compressed, read it back (whole
! and a box), and append records of a derived type. Run as `example DIR`; the test
! (tests/fortran.rs) reads what it wrote with Rust.
program example
  use, intrinsic :: iso_c_binding
  use rawarray
  implicit none

  integer, parameter :: nx = 30, ny = 20, nz = 10, nrec = 500
  type, bind(c) :: particle
    integer(c_int64_t) :: step
    real(c_float) :: position(3)
    real(c_double) :: energy   ! 4 bytes of padding before it
  end type

  real(c_float), allocatable :: a(:, :, :), b(:, :, :), box(:, :, :)
  type(particle), target :: p(nrec), back(nrec)
  type(c_ptr) :: f, opts, rtype, w
  integer(c_int64_t) :: dims(3), start(3), count(3), n
  integer(c_size_t) :: nd
  integer :: i, j, k
  character(len=4096) :: dir

  call get_command_argument(1, dir)
  allocate(a(nx, ny, nz))
  do k = 1, nz
    do j = 1, ny
      do i = 1, nx
        a(i, j, k) = real((i - 1) + 100 * (j - 1) + 10000 * (k - 1), c_float)
      end do
    end do
  end do
  dims = [int(nx, c_int64_t), int(ny, c_int64_t), int(nz, c_int64_t)]

  ! A Fortran array is the file's order: a(i, j, k) is element [i, j, k], first fastest.
  call check(ra_write(ra_cstr(trim(dir) // "/f_plain.ra"), RA_FLOAT, 4_c_int64_t, RA_ORDER_FILE, &
       dims, 3_c_size_t, a, bytes_of(size(a)), c_null_ptr))
  call check(ra_write_options_for_name(ra_cstr("zstd"), opts))
  call check(ra_write_options_level(opts, 7))
  call check(ra_write_options_chunks(opts, RA_ORDER_FILE, [int(nx, c_int64_t), int(ny, c_int64_t), 2_c_int64_t], &
       3_c_size_t))
  call check(ra_write_options_params_json(opts, ra_cstr('{"from": "fortran"}')))
  call check(ra_write(ra_cstr(trim(dir) // "/f_zstd.ra"), RA_FLOAT, 4_c_int64_t, RA_ORDER_FILE, &
       dims, 3_c_size_t, a, bytes_of(size(a)), opts))
  call ra_write_options_free(opts)

  ! Read the compressed file back: its dims, then the whole array, then a box.
  call check(ra_open(ra_cstr(trim(dir) // "/f_zstd.ra"), f))
  call check(ra_file_ndims(f, nd))
  call check(ra_file_dims(f, RA_ORDER_FILE, dims, nd))
  allocate(b(dims(1), dims(2), dims(3)))
  call check(ra_read_all(f, b, bytes_of(size(b))))
  if (any(b /= a)) error stop "f_zstd.ra does not read back"
  start = [5_c_int64_t, 0_c_int64_t, 3_c_int64_t]
  count = [10_c_int64_t, 4_c_int64_t, 2_c_int64_t]
  allocate(box(count(1), count(2), count(3)))
  call check(ra_read_box(f, RA_ORDER_FILE, start, count, 3_c_size_t, box, bytes_of(size(box))))
  if (any(box /= a(6:15, 1:4, 4:5))) error stop "the box does not read back"
  call ra_close(f)
  print '(a)', "fortran: arrays ok"

  ! Records of a derived type: each field at its offset in the type (padding included).
  call check(ra_record_type_new(ra_cstr("Particle"), int(c_sizeof(p(1)), c_int64_t), rtype))
  call check(ra_record_type_add(rtype, ra_cstr("step"), RA_INT, 8_c_int64_t, 1_c_int64_t, &
       offset(c_loc(p(1)%step))))
  call check(ra_record_type_add(rtype, ra_cstr("position"), RA_FLOAT, 4_c_int64_t, 3_c_int64_t, &
       offset(c_loc(p(1)%position))))
  call check(ra_record_type_add(rtype, ra_cstr("energy"), RA_FLOAT, 8_c_int64_t, 1_c_int64_t, &
       offset(c_loc(p(1)%energy))))
  do i = 1, nrec
    p(i)%step = i - 1
    p(i)%position = [real(i, c_float), 2.0_c_float * i, -1.0_c_float * i]
    p(i)%energy = 1.0_c_double / i
  end do
  call check(ra_records_create(ra_cstr(trim(dir) // "/f_records.ra"), rtype, c_null_ptr, w))
  do i = 1, nrec, 100
    call check(ra_records_append(w, p(i:i + 99), 100_c_int64_t))
    call check(ra_records_flush(w))   ! readers see them; a killed run keeps them
  end do
  call check(ra_records_len(w, n))
  if (n /= nrec) error stop "records_len"
  call check(ra_records_close(w))

  call check(ra_open(ra_cstr(trim(dir) // "/f_records.ra"), f))
  call check(ra_read_records(f, rtype, 0_c_int64_t, int(nrec, c_int64_t), back, &
       int(c_sizeof(p(1)), c_int64_t) * nrec))
  call ra_close(f)
  do i = 1, nrec
    if (back(i)%step /= p(i)%step .or. any(back(i)%position /= p(i)%position) &
         .or. back(i)%energy /= p(i)%energy) error stop "the records do not read back"
  end do
  call ra_record_type_free(rtype)

  ! An error is a status and a message naming the file.
  if (ra_open(ra_cstr(trim(dir) // "/missing.ra"), f) /= RA_ERR_IO) error stop "missing file"
  print '(a)', "fortran: error: " // ra_error_message()
  print '(a)', "fortran: records ok"
  deallocate(a, b, box)

contains

  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= RA_OK) then
      print '(a)', "librawarray: " // ra_error_message()
      error stop 1
    end if
  end subroutine

  ! Bytes of `n` real(4) values.
  integer(c_int64_t) function bytes_of(n)
    integer, intent(in) :: n
    bytes_of = int(n, c_int64_t) * 4
  end function

  ! The offset of a field of p(1) from p(1) itself.
  integer(c_int64_t) function offset(field)
    type(c_ptr), intent(in) :: field
    offset = transfer(field, 0_c_intptr_t) - transfer(c_loc(p(1)), 0_c_intptr_t)
  end function
end program
