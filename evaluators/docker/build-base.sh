#!/bin/sh
# The sandbox image's base, from a Debian package mirror alone (no registry, no pull):
#
#   build-base.sh ROOTFS_DIR OUT_TAR SUITE MIRROR PACKAGES_FILE PRUNE_FILE
#
# debootstrap's minbase variant plus the packages listed in PACKAGES_FILE, less the
# packages listed in PRUNE_FILE (build-time dependencies nothing runs) and what an
# evaluation never reads, packed as a tar that `docker import` turns into an image. Needs
# root and debootstrap (apt-get install debootstrap). `evolve sandbox build` runs it and
# imports the tar; the tag is a hash of this script and the two lists.
set -eu
rootfs=$1
out=$2
suite=$3
mirror=$4
packages=$5
prune=$6
include=$(sed -e 's/#.*//' "$packages" | tr -s ' \t\n' ',' | sed -e 's/^,//' -e 's/,$//')
debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror"
# shellcheck disable=SC2046  # one word per package name
PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$rootfs" dpkg --purge --force-depends \
    $(sed -e 's/#.*//' "$prune")
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
    "$rootfs"/usr/share/locale/* "$rootfs"/var/log/*
tar --numeric-owner -C "$rootfs" -cf "$out" .
