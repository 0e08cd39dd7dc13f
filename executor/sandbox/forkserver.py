# runblock fork server: the mechanics of a run forked from a warm, guarded
# interpreter (see forkServer in forkserver_linux.go for the design, and
# policy.go for what is enforced). Compiled with guard.py, which calls
# _runblock_forkserver in "forkserver" mode once the guard is in place and
# the preloads imported.
#
# The fork server is uid 0 of the fork-server sandbox's own user
# namespace, inside its mount, PID, network, IPC, UTS and cgroup
# namespaces and minimal root, built by its init (Go: sandboxForkServer, internal/stage).
# It never runs user code. Its descriptors (protocol.go, whose numbers
# come in its configuration): control_fd the socket to its init
# (SOCK_SEQPACKET: one message per run, its record and the run's
# descriptors: python's 0 to 4, a back channel to the init at run_back
# and, at run_init, a pidfd of the run's PID 1; or the PID 1 of a run
# whose python to reap), status_fd its status pipe ("ready").
#
# A run is two processes:
#   its PID 1, which the fork server's init made (a clone of a small
#       process of its own, the maker, in fresh user, mount, PID, network,
#       IPC, UTS and cgroup namespaces, its ids mapped): uid 0 of the
#       run's user namespace, it only holds the namespaces and reaps the
#       run's orphans, until the fork server's init kills it, which ends
#       every process of the run;
#   python, forked by the fork server into the PID namespace of the run's
#       PID 1, whose other namespaces it then joins (the fork server reaps
#       it once the init, which reads how it ended from its zombie, asks
#       for it; the PID 1 ends only then): mounts the run's /proc
#       and a fresh work dir tmpfs, says hello to the fork server's init on
#       the back channel (with its credentials, the work dir and a
#       sock_diag socket of the run's network namespace;
#       the init answers with its Landlock ruleset, and from then on
#       accounts its memory, reads how it ended and its files, and
#       reports); then locks itself down in the order of the cold path
#       (policy.Lockdown): keeps descriptors 0 to 4 only, sets
#       no_new_privs, Landlock and seccomp, drops to the sandbox uid with
#       no capabilities, sets its rlimits, and returns into the guard,
#       which reseeds, says "ready" and runs one snippet. It records each
#       step of its lockdown as it takes it, under the names its
#       configuration gives (conf["step_..."]), and the guard names them
#       on the ready line, in that order: the canary run and
#       TestLockdownOrder hold them to policy.Lockdown.


def _runblock_forkserver(config):
    import ctypes
    import fcntl
    import json
    import os
    import posix
    import resource
    import socket
    import struct
    import sys

    import _socket

    # _signal's signal(), not signal's: the same call without the enum
    # conversions of its result, which cost a run about 0.1 ms each.
    import _signal as signal

    # Each run's PID 1 polls its lifeline with select: imported here,
    # before the forks, so that no run pays for loading it.
    import select
    del select

    CAPSET_VERSION = 0x20080522  # protocol: CapabilityVersion3
    conf = json.loads(config)
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    # python is forked into the namespaces of the run's PID 1, which the
    # fork server's init made (a pidfd of it comes with the request): the
    # fork, into its PID namespace (the fork server's, for its children
    # only, then its own again); python then joins the others itself.
    # glibc's fork (its own at-fork steps, and python's thread id right),
    # with the interpreter's before- and after-fork steps around it, as
    # os.fork takes them, but for threading's: it rebuilds what other
    # threads of the parent may have left; where the fork server ran no
    # thread but its own (as it does unless a preload started one), it
    # would make anew what is already right, and copy about a quarter of a
    # MiB of the fork server's pages into every run (where a preload
    # imported threading; the plain fork server does not); it runs as
    # nothing then, and is put back for the snippet's own forks. The
    # interpreter's steps run with the GIL held throughout (PyDLL).
    pydll = ctypes.PyDLL(None, use_errno=True)
    fork = pydll.fork
    # Each C function is looked up here, once (ctypes looks a library's
    # function up, and makes its object, at its first use): looked up in a
    # fork, it costs every run the lookup again and the pages it writes.
    before_fork = ctypes.pythonapi.PyOS_BeforeFork
    after_fork_child = ctypes.pythonapi.PyOS_AfterFork_Child
    after_fork_parent = ctypes.pythonapi.PyOS_AfterFork_Parent
    for name in ("mount", "prctl", "syscall", "capset", "setns"):
        getattr(libc, name)
    own_pid = posix.open("/proc/self/ns/pid", posix.O_RDONLY | posix.O_CLOEXEC)
    newpid = conf["clone_newpid"]

    def fork_python(init):
        check(libc.setns(init, newpid), "setns the run's PID namespace")
        before_fork()
        pid = fork()
        if pid == 0:
            quiet = quiet_hooks if len(threads[0]) == 1 and not threads[1] else ()
            for hook, _ in quiet:
                hook.__code__ = nothing.__code__
            after_fork_child()
            for hook, code in quiet:
                hook.__code__ = code
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the fork server's reaping is not python's
            return 0
        errno = ctypes.get_errno()
        after_fork_parent()
        if libc.setns(own_pid, newpid) < 0:
            posix._exit(1)  # its children would be in a run's PID namespace: its init starts another fork server
        if pid < 0:
            raise OSError(errno, f"fork: {os.strerror(errno)}")
        return pid

    # A run request comes as its record (protocol.ForkRun.Record), read
    # with an unpacker made at the first request of its length.
    unpackers = {}

    def record(msg):
        unpack = unpackers.get(len(msg))
        if unpack is None:
            n, head = len(msg) // 8, conf["record_rlimits"]
            if len(msg) % 8 or n < head or (n - head) % 2:
                raise ValueError(f"a run request of {len(msg)} bytes is no record")
            unpack = unpackers[len(msg)] = struct.Struct("<%dq%s" % (head, "qQ" * ((n - head) // 2))).unpack
        return unpack(msg)

    seccomp = ctypes.create_string_buffer(bytes.fromhex(conf["seccomp"]))
    # What the runs use, made once: libc, the fork, fcntl and setrlimit
    # (imported here, not in every run), the seccomp program and the
    # capability structures.
    kit = {
        "libc": libc, "check": check, "fork_python": fork_python, "fcntl": fcntl, "setrlimit": resource.setrlimit,
        "fprog": SockFprog(len(seccomp.raw) // 8, ctypes.addressof(seccomp)) if conf["seccomp"] else None,
        "cap_header": (ctypes.c_uint32 * 2)(CAPSET_VERSION, 0),  # this process
        "cap_data": (ctypes.c_uint32 * 6)(),  # none
        "seccomp": seccomp,  # fprog points into it
        # A run's hello (_runblock_run_python) goes through _socket's
        # socket, its sendmsg and recvmsg, not socket's Python layer over
        # them (socket.socket, send_fds, recv_fds), through which each run
        # copied about 13 more of the fork server's pages.
        "hello": (_socket.socket, (_socket.SOL_SOCKET, _socket.SCM_RIGHTS), struct.Struct("=2i").pack,
                  struct.Struct("=i").unpack_from, _socket.CMSG_SPACE(4)),
    }

    import gc

    ctl = socket.socket(fileno=conf["control_fd"])
    # The runs' pythons are children of this process, each known by its
    # run's PID 1 (record_init) until its init asks for its reap (protocol:
    # ForkReapSize), having read how it ended from the zombie's stat file
    # or never to: then it is reaped, at once or as it ends.
    children = kit["children"] = {}
    reaping = set()

    def reap(signum, frame):
        for pid in list(reaping):
            try:
                if posix.waitpid(pid, posix.WNOHANG)[0] == 0:
                    continue
            except ChildProcessError:
                pass
            reaping.discard(pid)

    signal.signal(signal.SIGCHLD, reap)
    # Only an end is news: a session's python is stopped after each cell
    # and continued before the next (sessionSandbox.hold), and each stop
    # and each continue of a child woke this process for reap, beside the
    # cell (0.02 to 0.03 ms of its CPU a cell). SA_NOCLDSTOP, added to the
    # flags python's own handler was installed with (glibc's struct
    # sigaction), asks the kernel not to signal them.
    SA_NOCLDSTOP = 1  # protocol: SaNoCldStop

    class Sigaction(ctypes.Structure):
        _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_byte * 128), ("flags", ctypes.c_int),
                    ("restorer", ctypes.c_void_p)]

    chld = Sigaction()
    check(libc.sigaction(signal.SIGCHLD, None, ctypes.byref(chld)), "read SIGCHLD's action")
    chld.flags |= SA_NOCLDSTOP
    check(libc.sigaction(signal.SIGCHLD, ctypes.byref(chld), None), "set SA_NOCLDSTOP")
    _runblock_warm()
    kit["pyplot"] = _runblock_warm_plots()
    _runblock_keep_fonts(ctypes)
    threads, quiet_hooks, nothing = _runblock_quiet_hooks()
    kit["ballast"] = _runblock_ballast()
    # A run's python returns from here into the guard. A function's return
    # releases each of its locals (and, the last reference gone, all they
    # hold: the libraries' handles, the closures, the ctypes types...),
    # which writes to the pages that hold them and so copied them into
    # every run, about 0.1 MiB. A frame whose frame object is still
    # referenced keeps its locals instead (as a traceback's frames do).
    _RUNBLOCK_KEPT_FRAMES.append(sys._getframe())
    # Out of the collector's sight: a collection in a fork would write to
    # every object, and so copy the whole heap.
    gc.freeze()
    # The interpreter's method cache holds a reference to the name of each
    # attribute it found: a fork's first lookups replace its entries, and
    # the names they drop, scattered over the heap, were copied into every
    # run (about 0.15 MiB). Emptied, its entries hold None.
    sys._clear_type_cache()
    posix.write(conf["status_fd"], conf["ready"].encode() + b"\n")
    posix.close(conf["status_fd"])
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, conf["request_max"], conf["run_fds"] + 1)
        except InterruptedError:
            continue
        if not msg:
            posix._exit(0)  # its init closed its end: the service is done
        if len(msg) == conf["reap_size"] and not fds:
            python = children.pop(int.from_bytes(msg, "little", signed=True), None)
            if python is not None:  # else its fork failed, or it was asked for before
                reaping.add(python)
            reap(0, None)  # asked again (forkedRun.kill): whatever ended since
            continue
        try:
            if len(fds) != conf["run_fds"]:
                raise ValueError(f"a run needs {conf['run_fds']} descriptors, got {len(fds)}")
            steps = _runblock_fork_run(conf, record(msg), fds, kit)
            if steps:
                fds = []  # python holds its own now, as 0 to 4
                return steps  # in a run's python: the guard runs the snippet
        except Exception as exc:
            if len(fds) == conf["run_fds"]:
                _runblock_fork_failed(conf, fds[conf["run_back"]], exc)
        finally:
            for fd in fds:
                try:
                    posix.close(fd)
                except OSError:
                    pass


# The standard modules snippets import most (LLM-written code and
# HumanEval's programs: typing, math, random, collections...) and the ones
# every failed run needs (traceback, linecache and tokenize, which print
# its traceback), and atexit, which every run's end needs (imported in a
# fork, 0.29 ms of a print('hello')): imported once here, each run finds
# them in sys.modules.
# Imported fresh in a fork they cost a run more than its own work: typing
# 10 ms, traceback 11 ms of bare python's start-up on the development
# machine, and a failed print('hello') took 45 ms to a successful one's 10
# in the sandbox. Random state is reseeded in every fork (_runblock_reseed).
_RUNBLOCK_WARM = ("atexit", "traceback", "linecache", "tokenize", "typing", "dataclasses", "collections", "itertools",
                  "functools", "math", "random", "string", "copy", "heapq", "bisect", "datetime", "textwrap", "json")


def _runblock_warm():
    """Imports _RUNBLOCK_WARM, and does once what each run would
    otherwise do first: compiles a snippet (the compiler's first use costs
    about 1.5 ms) and formats a traceback from source held in linecache,
    as _runblock_report does."""
    import io
    import sys

    for name in _RUNBLOCK_WARM:
        try:
            __import__(name)
        except Exception:
            pass  # a run imports it itself, as it would have
    try:
        source = b"def f():\n    return 1 / 0\nf()\n"
        code = compile(source, "<snippet>", "exec")
        try:
            exec(code, {"__name__": "__main__"})
        except ZeroDivisionError as exc:
            linecache = sys.modules["linecache"]
            linecache.cache["<snippet>"] = (len(source), None, source.decode().splitlines(True), "<snippet>")
            sys.modules["traceback"].print_exception(type(exc), exc, exc.__traceback__, file=io.StringIO())
            linecache.clearcache()
    except Exception:
        pass  # each run then does this for itself


# The fork server's frame, kept (see _runblock_forkserver).
_RUNBLOCK_KEPT_FRAMES = []

# CPython's small-object allocator (obmalloc, 3.10 and later on 64 bits):
# pools of 16 KiB, each holding blocks of one size class (16 to 512
# bytes, a class every 16), its first block 48 bytes in, past its header.
_RUNBLOCK_POOL_BYTES, _RUNBLOCK_POOL_FIRST = 16384, 48
# What the ballast holds at most: under obmalloc it stops well before
# (about 0.8 MiB, the preloaded fork server), elsewhere only at this.
_RUNBLOCK_BALLAST_BYTES = 2 << 20


def _runblock_ballast():
    """Takes every free block of the small-object allocator's pools, and
    returns what holds them, to be kept for good. The blocks the fork
    server's imports and warm-up freed lie among live objects on pages a
    fork shares with it: a run's first allocations took them, and so
    copied those pages (a pre-forked print('hello') faulted about 490
    times before its snippet began, Debian's python 3.11). Taken here, a
    run allocates from fresh pools instead: about 455.

    For each size class from 512 bytes down to 32, objects of that size
    are made until one is the first block of a pool: one the allocator
    has just begun, every other pool of its class full (or one whose
    first block was free, which only stops this early). What it makes on
    the way and lets go took no old free block for good: the list's
    array is past 512 bytes from the start (not the allocator's), and
    the counts are ints of 32 bytes, the class it fills last, let go at
    once. The 16-byte class, filled with object()s too, cost a run about
    12 faults more. An allocator that is not obmalloc (a build without
    it, a free-threaded one) only stops it at _RUNBLOCK_BALLAST_BYTES."""
    ballast = [None] * 65  # 520 bytes, so that no array it outgrows is a block
    held = 0
    size = 512
    while size >= 32:
        while held < _RUNBLOCK_BALLAST_BYTES:
            # A bytes object is 33 bytes and its length, a one-digit int 28.
            obj = bytes(size - 33) if size > 32 else (1 << 20) + len(ballast)
            ballast.append(obj)
            held += size
            if id(obj) % _RUNBLOCK_POOL_BYTES == _RUNBLOCK_POOL_FIRST:
                break
        size -= 16
    return ballast


def _runblock_quiet_hooks():
    """The after-fork hooks a fork from a process that ran one thread may
    skip, with their code: threading's (see fork_python), where it takes
    no argument; the threads threading knows of (_active, _limbo), by
    which a fork tells that its parent ran one; and a function that does
    nothing, whose code stands in for theirs. (logging's hook is not one:
    the before-fork step that it pairs with took logging's lock, which the
    child must make anew.)"""
    import sys

    def nothing():
        pass

    threading = sys.modules.get("threading")
    hook = getattr(threading, "_after_fork", None)
    if type(hook) is not type(nothing) or hook.__code__.co_argcount or hook.__code__.co_freevars:
        return ({}, {}), [], nothing
    return (threading._active, threading._limbo), [(hook, hook.__code__)], nothing


def _runblock_keep_fonts(ctypes):
    """Keeps alive, for good, the fonts the preload's figure loaded into
    matplotlib's font cache. matplotlib empties that cache in every fork
    (a font file's offset would be shared between processes), which freed
    each font's FreeType structures and so copied the pages of the fork
    server's heap that hold them into every run (about 0.1 MiB). Kept,
    the fonts are only dropped from the cache (a run loads its own, as
    before); no code can reach them, and no run frees them (a run ends
    with os._exit), so none closes a font file's descriptor number, which
    a run may by then use for a file of its own."""
    import gc
    import sys

    font_manager, ft2font = sys.modules.get("matplotlib.font_manager"), sys.modules.get("matplotlib.ft2font")
    cache = getattr(font_manager, "_get_font", None)
    font = getattr(ft2font, "FT2Font", None)
    if cache is None or font is None:
        return
    for obj in gc.get_referents(cache):
        if type(obj) is font:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _runblock_warm_plots():
    """Where the preload imported matplotlib.pyplot, draws one small figure
    and throws it away, so that what a first figure builds (the font file
    loaded and its glyph caches, the Agg renderer's and the text layout's
    caches, the PNG writer) is built once here, for every run, and not
    again in each: a plot in a fork took 86 ms, 58 ms after this (p50 of
    15, in one run on the 2-CPU development machine). Returns pyplot for
    the plots' rehearsal (_runblock_rehearse), None without it or where a
    figure could not be drawn."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or not _runblock_draw(plt):
        return None
    return plt


def _runblock_draw(plt):
    """Draws a small figure into a PNG as a run's figures are saved
    (_runblock_save_figure) and closes it; False if that failed (a run then
    draws as it would have without it)."""
    import io

    try:
        plt.plot([0, 1, 2], [0, 1, 0])
        plt.title("runblock")
        _runblock_save_figure(plt.gcf(), io.BytesIO(), "runblock")
        return True
    except Exception:
        return False
    finally:
        plt.close("all")


def _runblock_rehearse(plt):
    """A pre-forked run of the preloaded fork server (the plots' pool)
    draws a figure before it says "ready", off the snippet's time, so that
    the snippet's figure is drawn as a second figure in a process is, not
    as the first in a fork. A fork shares the fork server's heap, and the
    first figure drawn in it copies each shared page it writes (reference
    counts, caches, the renderer's state) at a fault of its own, about
    3,000 for the bench's sine plot, where the rehearsed one faults about
    130; it grows the heap the figure needs, and loads the font again
    (matplotlib empties its font cache in every fork). Its garbage is
    collected now, not in the snippet."""
    import gc

    _runblock_draw(plt)
    gc.collect()


def _runblock_fork_failed(conf, fd, exc):
    import json
    import posix

    where = ""
    tb = exc.__traceback__
    while tb is not None:
        where = f" (in {tb.tb_frame.f_code.co_name}, line {tb.tb_lineno})"
        tb = tb.tb_next
    # The init reads one datagram of hello_max bytes: error_max characters
    # fit in it as JSON in UTF-8, 6 bytes each at most (ASCII escapes
    # would take 12 for one outside the BMP; a lone surrogate becomes "?").
    message = f"fork server: {exc}{where}"[:conf["error_max"]]
    try:
        posix.write(fd, json.dumps({"error": message}, ensure_ascii=False).encode("utf-8", "replace") + b"\n")
    except OSError:
        pass


def _runblock_fork_run(conf, run, fds, kit):
    """Forks the run's python into the namespaces of the run's PID 1 (a
    pidfd of it at run_init), which its init made and mapped the ids of.
    In the run's python only, returns the lockdown steps it took, in
    order; None elsewhere."""
    import posix

    init = fds[conf["run_init"]]
    python = kit["fork_python"](init)
    if python:
        kit["children"][run[conf["record_init"]]] = python
        return None
    try:
        kit["check"](kit["libc"].setns(init, conf["join_flags"]), "join the run's namespaces")
        posix.close(init)
    except BaseException as exc:
        _runblock_fork_failed(conf, fds[conf["run_back"]], exc)
        posix._exit(1)
    steps = [conf["step_namespaces"]]  # made by its init, its ids mapped
    return _runblock_run_python(conf, run, fds[:conf["run_init"]], kit, steps)


def _runblock_run_python(conf, run, fds, kit, steps):
    """The run's python, still root of the run's namespaces: mounts the
    run's /proc and work dir, says hello to the fork server's init (its
    credentials and the work dir come with it), and locks itself down.
    Returns steps with the lockdown steps it took added, in order."""
    import posix
    from _socket import AF_NETLINK, SOCK_CLOEXEC, SOCK_DGRAM

    try:
        libc, check = kit["libc"], kit["check"]
        NOSUID, NODEV, NOEXEC = 2, 4, 8  # protocol: MountNoSuid MountNoDev MountNoExec
        NETLINK_SOCK_DIAG = 4  # protocol: NetlinkSockDiag
        check(libc.mount(b"proc", b"/proc", b"proc", NOSUID | NODEV | NOEXEC, conf["proc_options"].encode()), "mount /proc")
        work = conf["work_dir"]
        uid = conf["uid"] if run[conf["record_slot"]] >= 0 else 0
        flags = NOSUID | NODEV | (NOEXEC if conf["work_noexec"] else 0)
        opts = f"size={run[conf['record_work_bytes']]},nr_inodes={conf['work_inodes']},mode=700,uid={uid},gid={uid}"
        check(libc.mount(b"tmpfs", work.encode(), b"tmpfs", flags, opts.encode()), f"mount work dir ({opts})")
        shm = f"{work}/{conf['shm_dir']}"
        posix.mkdir(shm, 0o700)
        memory = run[conf["record_memory"]]
        opts = f"size={memory + memory // 8},nr_inodes={conf['work_inodes']},mode=700,uid={uid},gid={uid}"
        check(libc.mount(b"tmpfs", shm.encode(), b"tmpfs", flags, opts.encode()), f"mount shared memory ({opts})")
        steps.append(conf["step_mounts"])
        workfd = posix.open(work, posix.O_RDONLY | posix.O_DIRECTORY | posix.O_CLOEXEC)
        # sock_diag of the run's network namespace: its socket buffers are
        # the run's memory too.
        sock, rights, pack_fds, unpack_fd, fd_space = kit["hello"]
        diag = sock(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
        back = sock(fileno=fds[conf["run_back"]])
        back.sendmsg((b"{}",), ((*rights, pack_fds(workfd, diag.fileno())),))
        posix.close(workfd)
        diag.close()
        answer, got, _, _ = back.recvmsg(conf["hello_max"], fd_space)
        back.detach()
        if answer != b"{}":
            raise OSError(f"the fork server's init refused the run: {answer[:200]!r}")
        ruleset = -1
        for level, kind, data in got:
            if (level, kind) == rights and len(data) >= 4:
                ruleset = unpack_fd(data)[0]
    except BaseException as exc:
        _runblock_fork_failed(conf, fds[conf["run_back"]], exc)
        posix._exit(1)
    try:
        _runblock_lock_run(conf, fds, uid, ruleset, run[conf["record_rlimits"]:], kit, steps)
        if run[conf["record_rehearse"]] and kit["pyplot"] is not None:
            _runblock_rehearse(kit["pyplot"])
    except BaseException as exc:
        _runblock_fork_failed(conf, 2, exc)  # the run's stderr by now
        posix._exit(1)
    return steps


def _runblock_lock_run(conf, fds, uid, ruleset, rlimits, kit, steps):
    """Python: locks itself down, in the order of policy.Lockdown after the
    namespaces and mounts: keeps the run's descriptors 0 to 4 only, sets
    no_new_privs, Landlock (the ruleset the fork server's init made, -1
    without Landlock) and seccomp, drops to uid with no capabilities, and
    sets its rlimits (resource, value, resource...); appends each step to
    steps once taken."""
    import _signal as signal  # (see _runblock_forkserver)
    import ctypes
    import posix

    PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 4, 22, 28, 38  # protocol: PrSetDumpable PrSetSeccomp PrSetSecurebits PrSetNoNewPrivs
    SECCOMP_MODE_FILTER, SECBITS_NOROOT = 2, 0x3  # protocol: SeccompModeFilter SecbitsNoRoot
    SYS_LANDLOCK_RESTRICT_SELF = 446  # protocol: SysLandlockRestrictSelf
    libc, check, fcntl = kit["libc"], kit["check"], kit["fcntl"]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any python
    posix.setsid()
    # Out of the way of 0 to 5 first.
    keep = conf["run_python_fds"]
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds[:keep] + ([ruleset] if ruleset >= 0 else [])]
    for i, fd in enumerate(high):
        posix.dup2(fd, i, inheritable=i < 3)
    posix.closerange(len(high), 1 << 30)
    steps.append(conf["step_descriptors"])
    posix.chdir(conf["work_dir"])
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    steps.append(conf["step_no_new_privs"])
    if ruleset >= 0:
        check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, keep, 0), "landlock_restrict_self")
        posix.close(keep)
        steps.append(conf["step_landlock"])
    if kit["fprog"] is not None:
        check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(kit["fprog"]), 0, 0), "seccomp")
        steps.append(conf["step_seccomp"])
    # No capabilities, even as uid 0 of the namespace (a service that is
    # not root maps no other uid), and none regained by exec. (The filter
    # allows what this takes: securebits, setgroups, setresuid, capset.)
    check(libc.prctl(PR_SET_SECUREBITS, SECBITS_NOROOT, 0, 0, 0), "securebits")
    if uid != 0:
        posix.setgroups([])  # (a namespace mapping one uid denies setgroups)
    posix.setresgid(uid, uid, uid)
    posix.setresuid(uid, uid, uid)
    # Changing uid made the process not dumpable, which would hide its own
    # /proc/self from it. (ptrace stays denied by seccomp.)
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "set dumpable")
    check(libc.capset(kit["cap_header"], kit["cap_data"]), "drop capabilities")
    steps.append(conf["step_uid"])
    # Soft = hard, as the sandbox uid, which cannot raise them again.
    for i in range(0, len(rlimits), 2):
        kit["setrlimit"](rlimits[i], (rlimits[i + 1], rlimits[i + 1]))
    steps.append(conf["step_rlimits"])
