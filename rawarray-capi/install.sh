#!/bin/sh
# Installs librawarray under PREFIX: lib/librawarray.{so,a}, include/rawarray.h, the Fortran
# module's source include/rawarray.f90, and lib/pkgconfig/rawarray.pc.
#   rawarray-capi/install.sh PREFIX            builds the release library first (cargo)
#   rawarray-capi/install.sh PREFIX LIBDIR     installs the libraries already built in LIBDIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:?usage: install.sh PREFIX [LIBDIR]}
libdir=${2:-}
if [ -z "$libdir" ]; then
  (cd "$here" && cargo build --release -p rawarray-capi)
  libdir=$(cd "$here" && cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../Cargo.toml" | head -n 1)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
for lib in librawarray.so librawarray.dylib librawarray.a; do
  if [ -f "$libdir/$lib" ]; then cp "$libdir/$lib" "$prefix/lib/"; fi
done
cp "$here/include/rawarray.h" "$here/fortran/rawarray.f90" "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/rawarray.pc.in" \
  > "$prefix/lib/pkgconfig/rawarray.pc"
echo "installed librawarray $version under $prefix"
