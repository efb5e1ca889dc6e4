! The RawArray (.ra) format from Fortran: interfaces to librawarray (include/rawarray.h) through
! iso_c_binding, and a few helpers for Fortran strings.
!
! Everything the C header says holds here: every function returns a status (RA_OK or an
! RA_ERR_* category; ra_error_message() is the message of the last failure on the thread),
! handles are type(c_ptr) freed by one function each, and strings passed in end in c_null_char
! (ra_cstr(s) adds it). A Fortran array a(n1, n2, n3) is the file of dims [n1, n2, n3] in
! RA_ORDER_FILE: the first index varies fastest in both. Buffers are passed as arrays of any
! type (type(*)), their size in bytes given alongside (storage_size(a) / 8 * size(a)).
!
! The constants below are the header's (tests/fortran.rs checks that they agree).
module rawarray
  use, intrinsic :: iso_c_binding
  implicit none
  private

  integer(c_int), parameter, public :: RA_OK = 0, RA_ERR_IO = 1, RA_ERR_DATA = 2, &
       RA_ERR_EOF = 3, RA_ERR_USAGE = 4, RA_ERR_INTERNAL = 5
  integer(c_int64_t), parameter, public :: RA_USER = 0, RA_INT = 1, RA_UINT = 2, &
       RA_FLOAT = 3, RA_COMPLEX = 4, RA_BFLOAT = 5
  integer(c_int), parameter, public :: RA_ORDER_FILE = 0, RA_ORDER_C = 1
  integer(c_int), parameter, public :: RA_STORAGE_PLAIN = 0, RA_STORAGE_LZ4 = 1, &
       RA_STORAGE_CHUNKED = 2
  ! RA_ABI_VERSION of the header (Fortran names ignore case: it would be ra_abi_version).
  integer(c_int32_t), parameter, public :: RA_HEADER_ABI_VERSION = 2

  public :: ra_cstr, ra_error_message, ra_fstr
  public :: ra_version, ra_abi_version, ra_last_error_status, ra_last_error_copy
  public :: ra_open, ra_close, ra_file_eltype, ra_file_logical, ra_file_elbyte, ra_file_ndims
  public :: ra_file_dims
  public :: ra_file_data_bytes, ra_file_storage, ra_file_chunks, ra_file_codec
  public :: ra_file_params_json, ra_file_record_bytes, ra_read_all, ra_read_box, ra_read_records
  public :: ra_write_options_new, ra_write_options_for_name, ra_write_options_free
  public :: ra_write_options_codec, ra_write_options_level, ra_write_options_filters
  public :: ra_write_options_chunks, ra_write_options_threads, ra_write_options_params_json
  public :: ra_write
  public :: ra_record_type_new, ra_record_type_add, ra_record_type_free
  public :: ra_records_create, ra_records_open, ra_records_append, ra_records_flush
  public :: ra_records_len, ra_records_close
  public :: ra_blocks_open_or_create, ra_blocks_write, ra_blocks_finish

  interface
    integer(c_int) function ra_version(out) bind(c, name="ra_version")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_abi_version(out) bind(c, name="ra_abi_version")
      import :: c_int, c_int32_t
      integer(c_int32_t), intent(out) :: out
    end function
    integer(c_int) function ra_last_error_status() bind(c, name="ra_last_error_status")
      import :: c_int
    end function
    integer(c_size_t) function ra_last_error_copy(buf, len) bind(c, name="ra_last_error_copy")
      import :: c_size_t, c_char
      character(kind=c_char), dimension(*), intent(out) :: buf
      integer(c_size_t), value :: len
    end function

    ! Reading.
    integer(c_int) function ra_open(path, out) bind(c, name="ra_open")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), intent(out) :: out
    end function
    subroutine ra_close(file) bind(c, name="ra_close")
      import :: c_ptr
      type(c_ptr), value :: file
    end subroutine
    integer(c_int) function ra_file_eltype(file, out) bind(c, name="ra_file_eltype")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file
      integer(c_int64_t), intent(out) :: out
    end function
    ! The elements' logical marker ("timestamp[ns]", "date", ...; "" for plain numbers and
    ! records), a string the handle owns: ra_fstr(out) is its Fortran copy.
    integer(c_int) function ra_file_logical(file, out) bind(c, name="ra_file_logical")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_file_elbyte(file, out) bind(c, name="ra_file_elbyte")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file
      integer(c_int64_t), intent(out) :: out
    end function
    integer(c_int) function ra_file_ndims(file, out) bind(c, name="ra_file_ndims")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: file
      integer(c_size_t), intent(out) :: out
    end function
    integer(c_int) function ra_file_dims(file, order, dims, capacity) bind(c, name="ra_file_dims")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      type(c_ptr), value :: file
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(out) :: dims
      integer(c_size_t), value :: capacity
    end function
    integer(c_int) function ra_file_data_bytes(file, out) bind(c, name="ra_file_data_bytes")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file
      integer(c_int64_t), intent(out) :: out
    end function
    integer(c_int) function ra_file_storage(file, out) bind(c, name="ra_file_storage")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
      integer(c_int), intent(out) :: out
    end function
    integer(c_int) function ra_file_chunks(file, order, chunks, capacity) bind(c, name="ra_file_chunks")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      type(c_ptr), value :: file
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(out) :: chunks
      integer(c_size_t), value :: capacity
    end function
    integer(c_int) function ra_file_codec(file, out) bind(c, name="ra_file_codec")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_file_params_json(file, out) bind(c, name="ra_file_params_json")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_file_record_bytes(file, out) bind(c, name="ra_file_record_bytes")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file
      integer(c_int64_t), intent(out) :: out
    end function
    integer(c_int) function ra_read_all(file, buf, buf_bytes) bind(c, name="ra_read_all")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file
      type(*), dimension(*), intent(inout) :: buf
      integer(c_int64_t), value :: buf_bytes
    end function
    integer(c_int) function ra_read_box(file, order, start, count, ndims, buf, buf_bytes) &
         bind(c, name="ra_read_box")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      type(c_ptr), value :: file
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(in) :: start, count
      integer(c_size_t), value :: ndims
      type(*), dimension(*), intent(inout) :: buf
      integer(c_int64_t), value :: buf_bytes
    end function
    integer(c_int) function ra_read_records(file, type, start, count, buf, buf_bytes) &
         bind(c, name="ra_read_records")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: file, type
      integer(c_int64_t), value :: start, count
      type(*), dimension(*), intent(inout) :: buf
      integer(c_int64_t), value :: buf_bytes
    end function

    ! Write options.
    integer(c_int) function ra_write_options_new(out) bind(c, name="ra_write_options_new")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_write_options_for_name(name, out) bind(c, name="ra_write_options_for_name")
      import :: c_int, c_ptr, c_char
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), intent(out) :: out
    end function
    subroutine ra_write_options_free(opts) bind(c, name="ra_write_options_free")
      import :: c_ptr
      type(c_ptr), value :: opts
    end subroutine
    integer(c_int) function ra_write_options_codec(opts, name) bind(c, name="ra_write_options_codec")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: opts
      character(kind=c_char), dimension(*), intent(in) :: name
    end function
    integer(c_int) function ra_write_options_level(opts, level) bind(c, name="ra_write_options_level")
      import :: c_int, c_ptr
      type(c_ptr), value :: opts
      integer(c_int), value :: level
    end function
    integer(c_int) function ra_write_options_filters(opts, spec) bind(c, name="ra_write_options_filters")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: opts
      character(kind=c_char), dimension(*), intent(in) :: spec
    end function
    integer(c_int) function ra_write_options_chunks(opts, order, chunks, ndims) &
         bind(c, name="ra_write_options_chunks")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      type(c_ptr), value :: opts
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(in) :: chunks
      integer(c_size_t), value :: ndims
    end function
    integer(c_int) function ra_write_options_threads(opts, threads) bind(c, name="ra_write_options_threads")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: opts
      integer(c_size_t), value :: threads
    end function
    integer(c_int) function ra_write_options_params_json(opts, json) &
         bind(c, name="ra_write_options_params_json")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: opts
      character(kind=c_char), dimension(*), intent(in) :: json
    end function

    ! Writing a whole array.
    integer(c_int) function ra_write(path, eltype, elbyte, order, dims, ndims, data, data_bytes, opts) &
         bind(c, name="ra_write")
      import :: c_int, c_ptr, c_char, c_int64_t, c_size_t
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int64_t), value :: eltype, elbyte
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(in) :: dims
      integer(c_size_t), value :: ndims
      type(*), dimension(*), intent(in) :: data
      integer(c_int64_t), value :: data_bytes
      type(c_ptr), value :: opts
    end function

    ! Record types and record files.
    integer(c_int) function ra_record_type_new(name, c_size, out) bind(c, name="ra_record_type_new")
      import :: c_int, c_ptr, c_char, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int64_t), value :: c_size
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_record_type_add(type, name, eltype, elbyte, count, c_offset) &
         bind(c, name="ra_record_type_add")
      import :: c_int, c_ptr, c_char, c_int64_t
      type(c_ptr), value :: type
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int64_t), value :: eltype, elbyte, count, c_offset
    end function
    subroutine ra_record_type_free(type) bind(c, name="ra_record_type_free")
      import :: c_ptr
      type(c_ptr), value :: type
    end subroutine
    integer(c_int) function ra_records_create(path, type, opts, out) bind(c, name="ra_records_create")
      import :: c_int, c_ptr, c_char
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), value :: type, opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_records_open(path, type, opts, out) bind(c, name="ra_records_open")
      import :: c_int, c_ptr, c_char
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), value :: type, opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_records_append(writer, records, count) bind(c, name="ra_records_append")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: writer
      type(*), dimension(*), intent(in) :: records
      integer(c_int64_t), value :: count
    end function
    integer(c_int) function ra_records_flush(writer) bind(c, name="ra_records_flush")
      import :: c_int, c_ptr
      type(c_ptr), value :: writer
    end function
    integer(c_int) function ra_records_len(writer, out) bind(c, name="ra_records_len")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: writer
      integer(c_int64_t), intent(out) :: out
    end function
    integer(c_int) function ra_records_close(writer) bind(c, name="ra_records_close")
      import :: c_int, c_ptr
      type(c_ptr), value :: writer
    end function

    ! Blocks of one array from many processes.
    integer(c_int) function ra_blocks_open_or_create(path, eltype, elbyte, order, dims, ndims, opts, out) &
         bind(c, name="ra_blocks_open_or_create")
      import :: c_int, c_ptr, c_char, c_int64_t, c_size_t
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int64_t), value :: eltype, elbyte
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(in) :: dims
      integer(c_size_t), value :: ndims
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function ra_blocks_write(blocks, order, start, count, ndims, data, data_bytes) &
         bind(c, name="ra_blocks_write")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      type(c_ptr), value :: blocks
      integer(c_int), value :: order
      integer(c_int64_t), dimension(*), intent(in) :: start, count
      integer(c_size_t), value :: ndims
      type(*), dimension(*), intent(in) :: data
      integer(c_int64_t), value :: data_bytes
    end function
    integer(c_int) function ra_blocks_finish(blocks) bind(c, name="ra_blocks_finish")
      import :: c_int, c_ptr
      type(c_ptr), value :: blocks
    end function

    function c_strlen(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

contains

  ! `s` without trailing blanks, NUL-terminated: a string argument for C.
  function ra_cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function

  ! A NUL-terminated string the library handed out (NULL: ""), as a Fortran string.
  function ra_fstr(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    if (.not. c_associated(p)) then
      s = ""
      return
    end if
    n = c_strlen(p)
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! The message of the last call that failed on this thread.
  function ra_error_message() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), allocatable :: buf(:)
    integer(c_size_t) :: n, i
    allocate(buf(1))
    n = ra_last_error_copy(buf, 0_c_size_t)
    deallocate(buf)
    allocate(buf(n + 1))
    n = ra_last_error_copy(buf, n + 1)
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = buf(i)
    end do
  end function

end module rawarray
