# runblock fork server: the mechanics of a run forked from a warm,
# guarded interpreter (see forkserver_linux.go for the design, policy.go for what
# is enforced). Compiled with guard.py, which calls _runblock_forkserver in
# "forkserver" mode once the guard is in place and the preloads imported.
#
# The fork server F is uid 0 of the fork-server sandbox's own user
# namespace, inside its mount, PID, network, IPC, UTS and cgroup namespaces
# and minimal root, built by its init (Go). It never runs user code. Its
# descriptors: 3 the control socket (SOCK_SEQPACKET: one message per run, a
# JSON object and the run's descriptors), 4 its status pipe ("ready"), 6 the
# service binary (O_PATH), the collector of a run's files.
#
# A run R is three processes:
#   R1, forked from F: unshares fresh user, mount, PID, network, IPC, UTS
#       and cgroup namespaces; F writes the new user namespace's id maps
#       (R1 cannot map more than its own uid); R1 forks R2 and exits.
#   R2, PID 1 of the run's PID namespace, uid 0 of the run's user namespace:
#       mounts the run's /proc and a fresh work dir tmpfs, forks R3, accounts
#       the run's memory, and when R3 ends kills what is left, reaps, and
#       reports how R3 ended (with the files, by exec'ing the collector when
#       the work dir holds any) on the init status descriptor, which R3
#       never holds. Closing the lifeline descriptor kills the run.
#   R3, the snippet's process: descriptors 0 to 4 only, the sandbox uid with
#       no capabilities, no_new_privs, Landlock, seccomp and the rlimits,
#       reseeded; it returns into the guard, which says "ready" and runs one
#       snippet.


def _runblock_forkserver(config):
    import ctypes
    import json
    import os
    import posix
    import socket

    conf = json.loads(config)
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    seccomp = ctypes.create_string_buffer(bytes.fromhex(conf["seccomp"]))
    fprog = SockFprog(len(seccomp.raw) // 8, ctypes.addressof(seccomp)) if conf["seccomp"] else None

    ctl = socket.socket(fileno=3)
    posix.write(4, b"ready\n")
    posix.close(4)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 8)
        except InterruptedError:
            continue
        if not msg:
            posix._exit(0)  # the service closed its end: it is done
        try:
            if len(fds) != 7:
                raise ValueError(f"a run needs 7 descriptors, got {len(fds)}")
            if _runblock_fork_run(conf, json.loads(msg), fds, libc, check, fprog, ctl):
                fds = []  # R3 holds them as 0 to 4 now
                return  # R3: the guard runs the snippet
        except Exception as exc:
            if len(fds) == 7:
                _runblock_fork_failed(fds[5], exc)
        finally:
            for fd in fds:
                try:
                    posix.close(fd)
                except OSError:
                    pass


def _runblock_fork_failed(fd, exc):
    import json
    import posix

    where = ""
    tb = exc.__traceback__
    while tb is not None:
        where = f" (in {tb.tb_frame.f_code.co_name}, line {tb.tb_lineno})"
        tb = tb.tb_next
    try:
        posix.write(fd, json.dumps({"error": f"fork server: {exc}{where}"}).encode() + b"\n")
    except OSError:
        pass


def _runblock_fork_run(conf, run, fds, libc, check, fprog, ctl):
    """Forks R1 and maps its new user namespace. True in R3 only."""
    import posix

    sync_r, sync_w = posix.pipe()
    back_r, back_w = posix.pipe()
    pid = posix.fork()
    if pid == 0:
        try:
            posix.close(ctl.detach())
            posix.close(sync_r)
            posix.close(back_w)
            check(libc.unshare(conf["clone_flags"]), "unshare")
            posix.write(sync_w, b"u")
            if posix.read(back_r, 1) != b"m":
                raise OSError("the fork server did not map the run's ids")
            posix.close(sync_w)
            posix.close(back_r)
            if posix.fork() != 0:
                posix._exit(0)
            return _runblock_run_init(conf, run, fds, libc, check, fprog)
        except BaseException as exc:
            _runblock_fork_failed(fds[5], exc)
            posix._exit(1)
    posix.close(sync_w)
    posix.close(back_r)
    try:
        if posix.read(sync_r, 1) == b"u":
            slot = run["slot"]
            # Root of the run's namespace is the fork server's root (whose
            # mounts it needs); the snippet's uid is a host uid of its own.
            ids = "0 0 1\n" if slot < 0 else f"0 0 1\n{conf['uid']} {conf['id_base'] + slot} 1\n"
            for name in ("uid_map", "gid_map"):
                with open(f"/proc/{pid}/{name}", "w") as f:
                    f.write(ids)
            posix.write(back_w, b"m")
    finally:
        posix.close(sync_r)
        posix.close(back_w)
        posix.waitpid(pid, 0)
    return False


def _runblock_run_init(conf, run, fds, libc, check, fprog):
    """R2: PID 1 of the run. True in R3 only."""
    import posix
    import signal

    stdin, stdout, stderr, request, status, report, lifeline = fds
    # PID 1 gets only the signals it handles: none, so a snippet of the
    # same uid cannot interrupt it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    check(libc.prctl(4, 0, 0, 0, 0), "set not dumpable")  # PR_SET_DUMPABLE
    nosuid, nodev, noexec = 2, 4, 8
    check(libc.mount(b"proc", b"/proc", b"proc", nosuid | nodev | noexec, conf["proc_options"].encode()), "mount /proc")
    work = conf["work_dir"]
    uid = conf["uid"] if run["slot"] >= 0 else 0
    flags = nosuid | nodev | (noexec if conf["work_noexec"] else 0)
    opts = f"size={run['work_bytes']},nr_inodes={conf['work_inodes']},mode=700,uid={uid},gid={uid}"
    check(libc.mount(b"tmpfs", work.encode(), b"tmpfs", flags, opts.encode()), f"mount work dir ({opts})")
    shm = f"{work}/{conf['shm_dir']}"
    posix.mkdir(shm, 0o700)
    posix.chown(shm, uid, uid)

    pid = posix.fork()
    if pid == 0:
        try:
            _runblock_lock_run(conf, run, fds, uid, libc, check, fprog)
        except BaseException as exc:
            _runblock_fork_failed(report, exc)
            posix._exit(1)
        return True
    for fd in (stdin, stdout, stderr, request, status):
        posix.close(fd)
    _runblock_supervise(conf, run, pid, report, lifeline)


def _runblock_lock_run(conf, run, fds, uid, libc, check, fprog):
    """R3: keeps the run's descriptors 0 to 4 only and locks itself down."""
    import ctypes
    import fcntl
    import posix
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any python
    posix.setsid()
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds[:5]]  # out of the way of 0 to 4
    for i, fd in enumerate(high):
        posix.dup2(fd, i)
        posix.set_inheritable(i, i < 3)
    posix.closerange(5, 1 << 30)
    posix.chdir(conf["work_dir"])
    # The ruleset names the run's own work dir and /proc: made here, while
    # this process may still reach every path it names.
    ruleset = _runblock_landlock(conf["landlock"], libc, check) if conf["landlock"] else -1
    # No capabilities, even as uid 0 of the namespace (a service that is
    # not root maps no other uid), and none regained by exec.
    check(libc.prctl(28, 0x3, 0, 0, 0), "securebits")  # PR_SET_SECUREBITS: NOROOT, NOROOT_LOCKED
    posix.setgroups([])
    posix.setresgid(uid, uid, uid)
    posix.setresuid(uid, uid, uid)
    # Changing uid made the process not dumpable: its init could no longer
    # read its memory use. (ptrace stays denied by seccomp.)
    check(libc.prctl(4, 1, 0, 0, 0), "set dumpable")  # PR_SET_DUMPABLE
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "drop capabilities")
    check(libc.prctl(38, 1, 0, 0, 0), "no_new_privs")  # PR_SET_NO_NEW_PRIVS
    if ruleset >= 0:
        check(libc.syscall(446, ruleset, 0), "landlock_restrict_self")
        posix.close(ruleset)
    if fprog is not None:
        check(libc.prctl(22, 2, ctypes.byref(fprog), 0, 0), "seccomp")  # PR_SET_SECCOMP, FILTER
    _runblock_rlimits(run["rlimits"])


def _runblock_landlock(ll, libc, check):
    """Makes the Landlock ruleset the service described (see forkLandlock)."""
    import ctypes
    import posix

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("access", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    attr = RulesetAttr(ll["handled_fs"], ll["handled_net"])
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.sizeof(attr), 0)  # landlock_create_ruleset
    check(ruleset, "landlock_create_ruleset")
    for rule in ll["rules"]:
        for path in rule["paths"]:
            try:
                fd = posix.open(path, posix.O_PATH | posix.O_CLOEXEC)
            except FileNotFoundError:
                if rule["optional"]:
                    continue
                raise
            try:
                beneath = PathBeneath(rule["access"], fd)
                check(libc.syscall(445, ruleset, 1, ctypes.byref(beneath), 0), f"landlock_add_rule {path}")
            finally:
                posix.close(fd)
    return ruleset


def _runblock_supervise(conf, run, pid, report, lifeline):
    """R2 once R3 runs: waits for it, accounts the run's memory, kills the
    run when the lifeline closes or the memory passes the limit, then
    reports. Never returns."""
    import json
    import posix
    import select
    import signal

    limit = run["memory"]
    pidfd = posix.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(lifeline, select.POLLIN)
    st = {"exited": False, "exit_code": 0, "signal": 0}
    peak, killed_memory, wait = 0, False, 0 if limit > 0 else None
    while True:
        ended = None
        while True:
            try:
                reaped, status = posix.waitpid(-1, posix.WNOHANG)
            except ChildProcessError:
                break
            if reaped == 0:
                break
            if reaped == pid:
                ended = status
        if ended is not None:
            if posix.WIFSIGNALED(ended):
                st["signal"] = posix.WTERMSIG(ended)
            else:
                st["exited"], st["exit_code"] = True, posix.WEXITSTATUS(ended)
            break
        events = poller.poll(wait)
        if any(fd == lifeline for fd, _ in events):
            _runblock_kill_all()  # the service killed the run
            posix._exit(1)
        if events or limit <= 0 or killed_memory:
            continue
        used = _runblock_run_memory(conf["work_dir"])
        peak = max(peak, used)
        if used > limit:
            killed_memory = True
            _runblock_kill_all()
            wait = None
            continue
        left = (limit - used) / conf["memory_rate"] * 1000
        wait = int(min(max(left, conf["poll_min_ms"]), conf["poll_ms"]))
    # R3 is done: end whatever it left, so nothing changes the work dir.
    _runblock_kill_all()
    while True:
        try:
            posix.waitpid(-1, 0)
        except ChildProcessError:
            break
    if killed_memory:
        st["memory"] = True
    if peak:
        st["peak"] = peak
    work = conf["work_dir"]
    if run["collect"]["max_files"] > 0 and any(not name.startswith(tuple(conf["scratch"])) for name in posix.listdir(work)):
        # The service's own collector (the Go init's) reads the files.
        posix.dup2(report, 5)
        arg = json.dumps({"status": st, "collect": run["collect"]})
        env = dict(kv.split("=", 1) for kv in conf["collector_env"])
        posix.execve(6, [conf["collector"], arg], env)
    posix.write(report, json.dumps(st).encode() + b"\n")
    posix._exit(0)


def _runblock_kill_all():
    """Kills every other process of the run's PID namespace."""
    import posix
    import signal

    try:
        posix.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass  # there is none


def _runblock_run_memory(work):
    """What the run holds: its processes' proportional share of anonymous
    and shared memory (pages still shared with the fork server count by
    their share) and the work dir's use."""
    import posix

    fs = posix.statvfs(work)
    total = (fs.f_blocks - fs.f_bfree) * fs.f_bsize
    for name in posix.listdir("/proc"):
        if name == "1" or not name.isdigit():
            continue
        try:
            fd = posix.open(f"/proc/{name}/smaps_rollup", posix.O_RDONLY)
        except OSError:
            continue  # gone
        try:
            data = posix.read(fd, 4096)
        except OSError:
            data = b""
        finally:
            posix.close(fd)
        for line in data.split(b"\n"):
            if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                total += int(line.split()[1]) << 10
    return total
