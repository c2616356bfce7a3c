"""The seccomp filter of the local sandbox: the kernel calls a candidate never needs.

Built once on the host with libseccomp (through `pyseccomp`) and handed to
bubblewrap as a compiled BPF program. Everything else is allowed: the filter
is a deny list of calls that escape or outlive the sandbox (new user
namespaces, mounts, keyrings, tracing other processes) or only widen the
kernel's attack surface (bpf, perf, io_uring, userfaultfd, modules).
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

# Namespace flags of clone(2)/unshare(2): a new user namespace would give the
# candidate capabilities (mount, network setup) inside it.
_CLONE_NEW = (0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x04000000, 0x08000000, 0x02000000)
_DENIED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "keyctl", "add_key", "request_key",  # the kernel keyrings outlive an evaluation
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "lookup_dcookie",
    "personality", "vhangup",
)  # fmt: skip


class SeccompUnavailable(RuntimeError):
    """libseccomp or its Python binding is missing: the filter cannot be built."""


@functools.cache
def bpf() -> bytes:
    """The compiled filter for this machine's architecture."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as e:  # OSError: the binding found no libseccomp.so
        raise SeccompUnavailable(f"libseccomp is not usable ({e})") from None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in _DENIED:
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            pass  # a call this kernel/architecture does not have
    for flag in _CLONE_NEW:  # one rule per flag: a rule's comparisons are all ANDed
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in a struct the filter cannot read: make libc fall back to clone.
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as t:
        f.export_bpf(t)
        t.seek(0)
        return t.read()


def filter_fd() -> int:
    """A fresh descriptor holding the filter at offset 0, for `bwrap --seccomp FD`."""
    fd = os.memfd_create("evolve-seccomp", 0)  # inheritable only where passed with pass_fds
    os.write(fd, bpf())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
