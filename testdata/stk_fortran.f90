! stk_fortran.f90: a module procedure (DW_TAG_module: gdb names it
! m::deep, not __m_MOD_deep) recursing with an assumed-shape array argument
! (bounds in a descriptor: gdb's bt prints a=...), stopped in a sleep under
! the Fortran main program, which gdb does not take for main.
module m
  use iso_c_binding, only: c_int
  interface
    function pause() bind(c, name='pause') result(r)
      import :: c_int
      integer(c_int) :: r
    end function
  end interface
contains
  recursive function deep(n, a) result(s)
    integer, intent(in) :: n
    real(8), intent(in) :: a(:)
    real(8) :: s
    integer(c_int) :: r
    if (n == 0) then
      r = pause()
      s = sum(a) + r
    else
      s = deep(n - 1, a * 2) + 1
    end if
  end function
end module
program p
  use m
  real(8) :: v(4) = [1d0, 2d0, 3d0, 4d0]
  print '(a)', 'ready'
  flush (6)
  print *, deep(3, v)
end program
