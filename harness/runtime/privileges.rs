//! Least privilege for cell processes: once its /dev/shm is mounted, a cell needs no capability.
//! Raw syscalls only, because this runs in the forked child before exec, where only
//! async-signal-safe calls are allowed (a capabilities crate would allocate). [`check`] turns a
//! raw syscall's return code into a result for every set-up that runs there.

/// A raw syscall's return code as a result (for the forked child: allocates nothing).
pub(super) fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Drops every capability (effective, permitted, inheritable, bounding and ambient) and sets
/// no_new_privs: a cell needs none once its /dev/shm is mounted. Raw syscalls only (runs after
/// fork).
pub fn drop_privileges() -> std::io::Result<()> {
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // SAFETY: raw syscalls on stack data.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            // EINVAL past the last capability this kernel knows: nothing to drop there.
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        let header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
