# runblock guard prelude and runner.
#
# Started as `python -I -S -c <this file> RLIMITS MODE FONTCACHE PRELOAD [site-dir ...]`
# (in effect: the service compiles this file once, with forkserver.py
# before it, and passes it on the request pipe, see guardLoader in plan.go).
# RLIMITS is "resource:limit,..." set as soft and hard limits; MODE is
# "isolated" (kernel layers contain the snippet), "strict" (the guard is all
# there is) or "forkserver" (this interpreter is the fork server, RLIMITS
# its configuration, and each run a fork of it: see forkserver.py), with
# "+unguarded" appended in tests that prove the kernel layers hold alone
# (the guard then refuses nothing);
# FONTCACHE is a read-only directory holding matplotlib's prebuilt font
# cache, or ""; PRELOAD names modules to import before "ready"
# ("numpy,matplotlib.pyplot"), or "". (protocol.go declares these slots and
# the descriptors; the protocol lines at the top of _runblock_run name
# them here.) The fds are:
#   0 stdin pipe, 1 stdout pipe, 2 stderr pipe,
#   3 request pipe: this program, then the request (see _runblock_unpack
#     below), until EOF,
#   4 status pipe: this runner writes "ready" once the guard is in place,
#     followed by the lockdown steps this python took (the rlimits here;
#     every step in a fork of the fork server), and "started" once it has
#     the snippet; it then closes 3 and 4, so the snippet holds 0, 1 and 2
#     only (any other descriptor is closed first).
# Nothing written here decides the verdict: the service takes it from wait
# statuses and its own and the init's accounting.
# The service pre-starts the interpreter, waits for "ready", then hands over
# the request. Everything before that runs outside the snippet's timeout.
#
# The guard is a courtesy against accidents, not the security boundary: the
# kernel isolation around this process is. What it refuses raises
# PermissionError naming the function; in the isolated tiers it refuses only
# what has no use in a sandbox, so libraries (numpy, pandas, matplotlib,
# multiprocessing, subprocess) work. The strict tier keeps the original
# execute_code (human-eval's reliability_guard) list.


def _runblock_run():
    import builtins
    import faulthandler
    import gc
    import posix
    import sys

    import resource

    # The protocol (protocol.go declares it; TestPythonProtocol holds these
    # lines to it): descriptors, argv slots, status lines.
    REQUEST, STATUS, GATE = 3, 4, 5  # protocol: FDRequest FDStatus FDGate
    CONFIG, MODE, FONTCACHE, PRELOAD, SITE = 1, 2, 3, 4, 5  # protocol: GuardArgConfig GuardArgMode GuardArgFontCache GuardArgPreload GuardArgSite
    READY, STARTED = b"ready", b"started\n"  # protocol: StatusReady StatusStarted
    STEP_RLIMITS = b"rlimits"  # protocol: StepRlimits
    SESSION = b"session "  # protocol: SessionStart
    RESULTS = b".runblock-results"  # protocol: ResultsFile

    read, write, close = posix.read, posix.write, posix.close
    mode, _, unguarded = sys.argv[MODE].partition("+")
    forkserver = mode == "forkserver"
    steps = []  # the lockdown steps this python took, in order, for its ready line
    if not forkserver:
        # A cold run's init opens the gate (its end of the pipe closes)
        # once it supervises this python, counted once: nothing of the run
        # comes before. Without an init (the tiers without namespaces)
        # there is no gate.
        try:
            read(GATE, 1)
        except OSError:
            pass
        # The stages mark everything else close-on-exec; the tier without
        # them relies on this.
        posix.closerange(GATE, 1 << 30)
        posix.set_inheritable(REQUEST, False)
        posix.set_inheritable(STATUS, False)
        for item in sys.argv[CONFIG].split(","):
            res, limit = map(int, item.split(":"))
            resource.setrlimit(res, (limit, limit))
        steps.append(STEP_RLIMITS)
    del resource
    strict = mode == "strict" and not unguarded
    fontcache = sys.argv[FONTCACHE]
    preload = [name for name in sys.argv[PRELOAD].split(",") if name]
    sys.path.extend(sys.argv[SITE:])
    workdir = posix.getcwd()
    faulthandler.disable()

    def refuse(qualname, why):
        def refused(*args, **kwargs):
            raise PermissionError(f"{qualname} is disabled in runblock ({why})")
        refused.__name__ = refused.__qualname__ = qualname.rpartition(".")[2]
        return refused

    class Quitter:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"Use {self.name}() to exit"

        def __call__(self, code=None):
            raise SystemExit(code)

    class Helper:
        def __repr__(self):
            return "Type help(object) for help about object."

        def __call__(self, *args, **kwargs):
            import pydoc
            return pydoc.help(*args, **kwargs)

    if strict:
        for name in ("exit", "quit", "help"):
            setattr(builtins, name, refuse(name, "no kernel isolation: strict guard"))
        for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
            sys.modules[name] = None
        refused = {
            "os": ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                   "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                   "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                   "lchflags", "lchmod", "lchown", "getcwd", "chdir"),
            "shutil": ("rmtree", "move", "chown"),
            "subprocess": ("Popen",),
        }
        why = "no kernel isolation: strict guard"
    else:
        # -S leaves these out; they are site's, made here.
        builtins.exit, builtins.quit, builtins.help = Quitter("exit"), Quitter("quit"), Helper()
        refused = {} if unguarded else {"os": ("system", "setuid", "setgid", "chroot")}
        why = "it has no use in a sandbox"

    # Matplotlib draws off-screen (MPLBACKEND=Agg); plt.show() and the
    # figures open at the end become PNG files in the work dir, which come
    # back with the run's other files.
    shown = {"n": 0}

    def save_figures(plt):
        for num in plt.get_fignums():
            fig = plt.figure(num)
            shown["n"] += 1
            name = f"{workdir}/figure-{shown['n']}.png"
            while posix.access(name, posix.F_OK):
                shown["n"] += 1
                name = f"{workdir}/figure-{shown['n']}.png"
            try:
                _runblock_save_figure(fig, name, describe_figure(fig))
            except Exception as exc:
                sys.stderr.write(f"runblock: could not save figure {num}: {exc}\n")
            plt.close(fig)

    def save_open_figures(failed):
        # Figures still open at a snippet's or a cell's end are attached,
        # as a notebook would; not after a MemoryError.
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and not isinstance(failed, MemoryError):
            try:
                save_figures(plt)
            except Exception:
                pass

    def describe_figure(fig):
        # The PNG's Description (alt text in chat): the titles and axis
        # labels matplotlib knows, "" when it knows none.
        parts = []
        try:
            sup = getattr(fig, "_suptitle", None)
            if sup is not None and sup.get_text():
                parts.append(sup.get_text())
            for ax in fig.get_axes():
                bits = [t for t in (ax.get_title(),) if t]
                bits += [f"{a} axis: {t}" for a, t in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())) if t]
                if bits:
                    parts.append(", ".join(bits))
        except Exception:
            pass
        return "; ".join(parts)[:1000]

    def fix_pyplot(module):
        def show(*args, **kwargs):
            save_figures(module)
        show.__doc__ = "Attach every open figure to the reply as a PNG (runblock)."
        module.show = show

    def fix_module(name):
        def fix(module):
            for attr in refused.get(name, ()):
                if hasattr(module, attr):
                    setattr(module, attr, refuse(f"{name}.{attr}", why))
        return fix

    # The patched modules are patched when first imported instead of up
    # front (os, shutil and subprocess cost ~1 ms and ~12 ms): the snippet
    # sees the same modules.
    fixes = {name: fix_module(name) for name in refused}
    fixes["matplotlib.pyplot"] = fix_pyplot

    class Loader:
        def __init__(self, loader, fix):
            self._loader, self._fix = loader, fix

        def __getattr__(self, name):
            return getattr(self._loader, name)

        def create_module(self, spec):
            return self._loader.create_module(spec)

        def exec_module(self, module):
            self._loader.exec_module(module)
            self._fix(module)

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            fix = fixes.get(name)
            if fix is None:
                return None
            for finder in sys.meta_path:
                if finder is Finder or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    spec.loader = Loader(spec.loader, fix)
                    return spec
            return None

    sys.meta_path.insert(0, Finder)
    for name in fixes:
        if name in sys.modules:
            fixes[name](sys.modules[name])

    # matplotlib's font cache, built once by the service: linked into the
    # per-run MPLCONFIGDIR so no snippet pays for building it.
    def link_fonts():
        if not fontcache:
            return
        mpldir = workdir + "/.config/matplotlib"
        for d in (workdir + "/.config", mpldir):
            try:
                posix.mkdir(d, 0o700)
            except FileExistsError:
                pass
        for entry in posix.listdir(fontcache):
            if entry.endswith(".json"):
                posix.symlink(f"{fontcache}/{entry}", f"{mpldir}/{entry}")

    link_fonts()
    for name in preload:
        try:
            __import__(name)
        except Exception:
            pass  # the snippet's own import says why; the service warned at start

    if forkserver:
        # A cell's notebook, not yet in place, made once here and shared by
        # every fork: it holds descriptor 1 by number, the run's stdout in
        # a fork, and only its counters change in a run. Made in each fork
        # it took about 0.4 ms of a pre-forked print('hello') and 0.1 MiB
        # of the pages it wrote, a session's as long as it lives.
        prepared = _runblock_notebook(in_place=False)
        # Returns only in a run: a fork in namespaces of its own, locked
        # down, holding the run's descriptors 0 to 4, in a fresh work dir.
        steps = [step.encode() for step in _runblock_forkserver(sys.argv[CONFIG])]
        link_fonts()
        _runblock_reseed()
        # The compiler's path through a syntax tree
        # (_runblock_cell_compile), whose first use in a fork copies the
        # pages it writes: taken before "ready", off the snippet's time.
        _runblock_cell_compile(b"0\n0\n", "<snippet>")
    else:
        prepared = None

    write(STATUS, b" ".join([READY] + steps) + b"\n")
    # A run's request, or a session's start (see _runblock_session): the
    # first bytes tell which.
    head = b""
    while len(head) < len(SESSION):
        chunk = read(REQUEST, 1 << 20)
        if not chunk:
            break
        head += chunk
    if head.startswith(SESSION):
        _runblock_session(head, workdir, save_open_figures, prepared)
    chunks = [head]
    while True:
        chunk = read(REQUEST, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    close(REQUEST)
    write(STATUS, STARTED)
    close(STATUS)
    source, args, colour, cell, launch = _runblock_unpack(b"".join(chunks), workdir)
    del chunks
    filename = "<snippet>"
    sys.argv = [filename] + args

    # Fresh globals {'__name__': '__main__'} that are also sys.modules['__main__'],
    # so pickling and multiprocessing find the snippet's functions.
    module = type(sys)("__main__")
    main = module.__dict__
    main.clear()
    main["__name__"] = "__main__"
    main["__builtins__"] = builtins
    sys.modules["__main__"] = module
    notebook = None
    if cell:
        notebook = prepared or _runblock_notebook()
        notebook[3]()
    del prepared
    try:
        codes, source, filename = _runblock_codes(source, filename, args, cell, launch, main)
    except SyntaxError as exc:
        _runblock_report(exc, None, source, filename, colour)
        sys.exit(1)
    except MemoryError:
        sys.stderr.write("MemoryError\n")
        sys.exit(1)
    # Everything alive so far lives until exit; out of the collector's
    # sight, the collections at interpreter exit skip it (~1 ms of CPU).
    gc.freeze()
    del gc
    failed, status = None, 0
    try:
        if notebook is None:
            for code, _ in codes:
                exec(code, main)
        else:
            notebook[0](codes, main)
    except SystemExit as exc:
        status = exc
    except BaseException as exc:
        failed = exc
    finally:
        save_open_figures(failed)
    if failed is not None:
        # Drop this runner's frame so the traceback starts in the snippet.
        _runblock_report(failed, failed.__traceback__.tb_next, source, filename, colour)
        status = 1
    last = None
    if notebook is not None:
        # A run's displays leave in a scratch file of its work dir, which
        # the init (or the service, without one) reads once python is dead.
        def last():
            shown, records = notebook[1]()
            if not shown:
                return
            path = workdir.encode("utf-8", "surrogateescape") + b"/" + RESULTS
            try:
                fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_NOFOLLOW | posix.O_NONBLOCK, 0o600)
                try:
                    view = memoryview(b"%d\n%s" % (shown, records))
                    while view:
                        view = view[write(fd, view):]
                finally:
                    close(fd)
            except OSError as exc:
                sys.stderr.write("runblock: the run's displays could not be passed on: %s\n" % exc)
    _runblock_exit(status, main, last, workdir)


def _runblock_exit(status, main, last=None, workdir=None):
    """Ends the run as the interpreter's exit does (non-daemon threads
    joined, atexit handlers run, the snippet's objects released so that the
    files it left open are flushed, the streams flushed), without then
    tearing down every module: in a fork of the fork server that touches,
    and so copies, the whole inherited heap. last, when given, is called
    once everything is flushed, just before the exit (a session's last
    cell sends its end there). Last of all, where workdir is given, it
    closes its standard streams and touches workdir's times: a forked
    run's init watches them, and from that touch reads how python ended
    as soon as the kernel has taken python's memory from it, not once it
    has freed it (about half of a pre-forked print('hello') went to that);
    the service reads the end of its output as soon, not once the streams
    close with the rest. The init trusts nothing of the touch (see
    forkedRun.exiting in stage's forkserver_linux.go)."""
    import atexit
    import gc
    import posix
    import sys

    if isinstance(status, SystemExit):
        code = status.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:
            try:
                print(code, file=sys.stderr)
            except Exception:
                pass
            status = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    atexit._run_exitfuncs()
    _runblock_close_files(gc, sys)
    try:
        main.clear()
        # The snippet's cycles: with nothing of it in the oldest
        # generation (what was alive before it is frozen), a collection
        # of the younger two finds every one, and skips what a full one
        # adds at no use here, emptying the free lists the fork shares
        # with its fork server (0.1 to 0.2 ms of a print('hello')).
        gc.collect(2 if gc.get_objects(2) else 1)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    if last is not None:
        last()
    if workdir is not None:
        for fd in (0, 1, 2):
            try:
                posix.close(fd)
            except OSError:
                pass
        try:
            posix.utime(workdir)
        except OSError:
            pass
    posix._exit(status & 0xFF)


def _runblock_save_figure(fig, target, description):
    """Saves a matplotlib figure as the PNG a reply attaches, its
    description (alt text in chat) in the PNG's Description. zlib's
    fastest level: Pillow's default level took about 15 ms of a plot's
    time (the encode alone, 640x480 in RGBA, on the 2-CPU development
    machine) and level 1 about 8, for a file about a fifth larger (29 KiB
    against 24 for the bench's sine plot)."""
    fig.savefig(target, format="png", metadata={"Description": description}, pil_kwargs={"compress_level": 1})


def _runblock_close_files(gc, sys):
    """Closes the files the snippet left open wherever it holds them (in
    __main__, on builtins, a module, a cycle), as an interpreter's teardown
    would: their buffered data reaches the work dir, archives get their
    trailers. Wrappers first (a text wrapper before the gzip file beneath
    it, a zip file before its file), and before any collection, whose
    finalizers run in no order (a raw file closed before its buffer loses
    the buffer). Files open for reading only are left alone: they hold
    nothing to write, and a daemon thread blocked reading one holds its
    lock, which close would wait for. The objects alive before the snippet
    are frozen, out of gc's lists: the walk sees the snippet's only, and
    copies none of a fork's shared pages."""

    def file_kind(kind):
        try:
            return issubclass(kind, io_base) or (zipfile is not None and issubclass(kind, zipfile.ZipFile))
        except BaseException:
            return False

    def writing(obj):
        try:
            if isinstance(obj, io.IOBase):
                return not obj.closed and obj.writable()
            return obj.mode != "r"  # a zipfile.ZipFile (file_kind)
        except BaseException:
            return False

    try:
        io = sys.modules["io"]
        # io.IOBase's C base, which every file class of io and every
        # subclass of io.IOBase derives from: asked of a class that is not
        # a file, io.IOBase (an ABC) walks all of its subclasses, 1.4 ms
        # for the 95 classes a plot leaves, this 0.02.
        io_base = getattr(sys.modules.get("_io"), "_IOBase", io.IOBase)
        zipfile = sys.modules.get("zipfile")
        std = {id(s) for s in (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)}
        # The kinds of file first, each class asked once: an isinstance
        # against io.IOBase per object took 2.5 to 3 ms after a plot, whose
        # figure leaves about 5,000 objects.
        objects = gc.get_objects()
        kinds = {kind for kind in set(map(type, objects)) if file_kind(kind)}
        files = {}
        for obj in objects:
            if type(obj) in kinds and id(obj) not in std and writing(obj):
                files[id(obj)] = obj
        del objects
        # What each one wraps: the files among its references and its
        # attributes' (a gzip file's fileobj, a text wrapper's buffer).
        inner = {}
        for key, obj in files.items():
            found = set()
            for ref in gc.get_referents(obj):
                if id(ref) in files:
                    found.add(id(ref))
                elif isinstance(ref, dict):
                    found.update(id(v) for v in ref.values() if id(v) in files)
            found.discard(key)
            inner[key] = found
        left = set(files)
        while left:
            wrapped = set()
            for key in left:
                wrapped |= inner[key]
            outer = [key for key in left if key not in wrapped] or list(left)  # a cycle: all at once
            for key in outer:
                left.discard(key)
                try:
                    files[key].close()
                except BaseException:
                    pass
    except BaseException:
        pass


def _runblock_session(head, workdir, save_open_figures, prepared):
    """A session: cells, one after another, in one persistent __main__,
    until the service closes the request pipe or a cell exits. The request
    pipe and the status pipe stay open (the cells' code can reach them: the
    service trusts nothing it reads there, see protocol.go).

    The session's start (head) is SESSION and the collect limits, one
    line; prepared is the cells' notebook where the fork server made it,
    else None. Each cell comes on the request pipe as one line,
    "<cell> <nonce> <request bytes> <stdin bytes>", then the request (as a
    run's, see _runblock_unpack: its input files are written into the work
    dir first) and its stdin. After the cell the guard flushes, writes the
    end marker (MARK_OPEN nonce MARK_CLOSE) on stdout and on stderr, and
    its result on the status pipe: "<nonce> <outcome> <files> <omitted>
    <displays>"
    then the files it created or changed since the last cell, each
    "<path bytes> <content bytes>" then the path and the content, and the
    omitted ones, each "<path bytes> <size> <reason>" then the path, then
    its displays (the count is the end line's last field; see
    _runblock_notebook's dump). A cell that exits (SystemExit) sends its
    end as the session's python exits."""
    import builtins
    import gc
    import io
    import linecache
    import posix
    import sys

    REQUEST, STATUS = 3, 4  # protocol: FDRequest FDStatus
    MARK_OPEN, MARK_CLOSE = b"\x00runblock-cell-end ", b"\x00"  # protocol: SessionMarkOpen SessionMarkClose
    OK, RAISED, EXITED = b"ok", b"raised", b"exit"  # protocol: CellOK CellRaised CellExited
    read, write, _exit = posix.read, posix.write, posix._exit

    def send(fd, data):
        view = memoryview(data)
        while view:
            view = view[write(fd, view):]

    buf = bytearray(head)

    def line():
        while b"\n" not in buf:
            if len(buf) > 4096:
                _exit(2)
            chunk = read(REQUEST, 1 << 20)
            if not chunk:
                _exit(0)  # the service ended the session
            buf.extend(chunk)
        end = buf.index(b"\n")
        fields = bytes(buf[:end]).split()
        del buf[:end + 1]
        return fields

    def take(n):
        while len(buf) < n:
            chunk = read(REQUEST, min(n - len(buf), 1 << 20))
            if not chunk:
                _exit(0)
            buf.extend(chunk)
        data = bytes(buf[:n])
        del buf[:n]
        return data

    limits = line()[1:]
    lim = [int(x) for x in limits[:6]] + [tuple(limits[6:])]
    module = type(sys)("__main__")
    main = module.__dict__
    main["__name__"] = "__main__"
    main["__builtins__"] = builtins
    sys.modules["__main__"] = module
    root = workdir.encode("utf-8", "surrogateescape")
    seen = _runblock_changes(root, {}, lim)[2]
    # The notebook the fork server made (prepared), else one made now; in
    # place from here on.
    run, dump, reset, install = prepared or _runblock_notebook(in_place=False)
    install()
    del prepared
    gc.freeze()
    del gc

    def end(nonce, outcome):
        nonlocal seen
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
        files, omitted, seen = _runblock_changes(root, seen, lim)
        marker = MARK_OPEN + nonce + MARK_CLOSE
        for fd in (1, 2):
            try:
                send(fd, marker)
            except OSError:
                pass
        displays, records = dump()
        out = [b"%s %s %d %d %d\n" % (nonce, outcome, len(files), len(omitted), displays)]
        for path, content in files:
            out += [b"%d %d\n" % (len(path), len(content)), path, content]
        for path, size, reason in omitted:
            out += [b"%d %d %s\n" % (len(path), size, reason), path]
        out.append(records)
        send(STATUS, b"".join(out))

    while True:
        cell, nonce, nrequest, nstdin = line()
        request, stdin = take(int(nrequest)), take(int(nstdin))
        filename = "<cell %d>" % int(cell)
        source, args, colour, cell, launch = _runblock_unpack(request, workdir)
        del request
        sys.argv = [filename] + args
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        del stdin
        linecache.cache[filename] = (len(source), None, source.decode("utf-8", "replace").splitlines(True), filename)
        failed, status, tb = None, None, None
        reset()
        try:
            codes, source, filename = _runblock_codes(source, filename, args, cell, launch, main)
        except (SyntaxError, MemoryError) as exc:
            failed = exc
        except SystemExit as exc:  # a launched file python cannot open
            status = exc
        else:
            try:
                if cell:
                    run(codes, main)
                else:
                    for code, _ in codes:
                        exec(code, main)
            except SystemExit as exc:
                status = exc
            except BaseException as exc:
                failed, tb = exc, exc.__traceback__.tb_next
            finally:
                del codes
                save_open_figures(failed)
        if status is not None:
            _runblock_exit(status, main, lambda: end(nonce, EXITED), workdir)
        if failed is not None:
            _runblock_report(failed, tb, source, filename, colour)
            failed = tb = None
            end(nonce, RAISED)
        else:
            end(nonce, OK)
        del source


def _runblock_changes(root, before, lim):
    """The regular files beneath root (bytes) created or changed since
    before (a snapshot: path -> ((mode, size, mtime, inode), digest)), as a run's
    collector takes them (collectFilesAt): scratch names left out, in the
    order they appeared, within lim (files, bytes, path bytes, named
    omitted, depth, entries looked at, scratch prefixes); the entries new
    or changed that do not come back, with why; and the new snapshot."""
    import posix
    import stat
    import time

    SYMLINK, NOT_REGULAR, HARD_LINK, UNREADABLE, TOO_DEEP, COUNT, SIZE, NOT_NAMED = b"symlink", b"not-regular", b"hard-link", b"unreadable", b"too-deep", b"count", b"size", b"not-named"  # protocol: OmitSymlink OmitNotRegular OmitHardLink OmitUnreadable OmitTooDeep OmitCount OmitSize OmitNotNamed
    max_files, max_bytes, max_path, max_omitted, max_depth, budget, scratch = lim
    now, found, omitted = {}, [], []
    # A file's times have the kernel's coarse clock (a few ms): a file
    # written again, to the same size, in the tick the snapshot saw it
    # written, would look unchanged. So the snapshot also keeps a digest
    # of the files written in its last RECENT ns, to compare.
    RECENT = 100_000_000
    start = time.time_ns()

    def digest(path):
        content, reason = read(path, max_bytes)
        return None if reason is not None else hash(content)

    def walk(prefix, depth):
        nonlocal budget
        try:
            names = posix.listdir(root + b"/" + prefix if prefix else root)
        except OSError:
            if before.get(prefix) != (None, None):
                omitted.append((prefix or b".", 0, UNREADABLE))
            now[prefix] = (None, None)
            return
        names = sorted(names[:max(budget, 0)])
        budget -= len(names)
        for name in names:
            if name.startswith(scratch):
                continue
            rel = prefix + name
            try:
                st = posix.lstat(root + b"/" + rel)
            except OSError:
                continue
            key = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
            if stat.S_ISDIR(st.st_mode):
                if depth >= max_depth:
                    now[rel + b"/"] = (key, None)
                    if before.get(rel + b"/") != (key, None):
                        omitted.append((rel + b"/", 0, TOO_DEEP))
                elif budget > 0:
                    walk(rel + b"/", depth + 1)
                continue
            old = before.get(rel)
            regular = stat.S_ISREG(st.st_mode)
            recent = regular and st.st_mtime_ns >= start - RECENT
            sig = digest(root + b"/" + rel) if recent or (old is not None and old[1] is not None) else None
            now[rel] = (key, sig if recent else None)
            if old is not None and old[0] == key and (old[1] is None or old[1] == sig):
                continue
            if regular:
                found.append((st.st_mtime_ns, rel, st.st_size))
            elif stat.S_ISLNK(st.st_mode):
                omitted.append((rel, 0, SYMLINK))
            else:
                omitted.append((rel, 0, NOT_REGULAR))

    def read(path, most):
        # Never through a symlink, never blocking on a FIFO.
        try:
            fd = posix.open(path, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_NOCTTY | posix.O_CLOEXEC)
        except OSError:
            return None, UNREADABLE
        try:
            st = posix.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, NOT_REGULAR
            if st.st_nlink != 1:
                return None, HARD_LINK
            chunks, n = [], 0
            while n <= most:
                chunk = posix.read(fd, min(most + 1 - n, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                n += len(chunk)
            if n > most:
                return None, SIZE
            return b"".join(chunks), None
        except OSError:
            return None, UNREADABLE
        finally:
            posix.close(fd)

    walk(b"", 0)
    files, left = [], max_bytes
    for _, rel, size in sorted(found):
        if len(rel) > max_path:
            omitted.append((rel, size, UNREADABLE))
        elif len(files) >= max_files:
            omitted.append((rel, size, COUNT))
        elif size > left:
            omitted.append((rel, size, SIZE))
        else:
            content, reason = read(root + b"/" + rel, left)
            if reason is None:
                left -= len(content)
                files.append((rel, content))
            else:
                omitted.append((rel, size, reason))
    omitted = [(path[:max_path], size, reason) for path, size, reason in omitted]
    if len(omitted) > max_omitted:
        omitted = omitted[:max_omitted] + [(b"", len(omitted) - max_omitted, NOT_NAMED)]
    return files, omitted, now


def _runblock_notebook(in_place=True):
    """A cell's notebook side (a run not in script mode): display() as a
    builtin, the value of the last expression, each shown object as a
    Jupyter MIME bundle (protocol.go's "Rich output" says how they travel
    and within which bounds). Returns (run, dump, reset, install):
    run(codes, main) runs a cell's codes (_runblock_cell_compile) and
    shows its value; dump() is how many displays were shown and their
    records; reset() starts a new cell; install() puts the notebook in
    place (sys.stdout counted, display() a builtin), which it is already
    unless in_place is False."""
    import builtins
    import io
    import sys

    TEXT_MAX, ENTRY_MAX, RUN_MAX, COUNT_MAX = 65536, 1048576, 4194304, 100  # protocol: DisplayTextMax DisplayEntryMax DisplayRunMax DisplayCountMax
    TABLE_ROWS, TABLE_COLUMNS = 100, 20  # protocol: DisplayTableRows DisplayTableColumns
    CO_COROUTINE = 0x80
    # Jupyter's order; text/html is carried, never the only form.
    REPRS = (("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"), ("image/svg+xml", "_repr_svg_"),
             ("text/markdown", "_repr_markdown_"), ("text/latex", "_repr_latex_"), ("application/json", "_repr_json_"),
             ("text/html", "_repr_html_"))
    TABLE = "application/vnd.dataresource+json"

    # What the snippet prints through sys.stdout is counted, to place each
    # display among it (what it writes to descriptor 1 itself is not).
    class Out(io.FileIO):
        written = 0

        def write(self, b):
            n = super().write(b)
            if n:
                self.written += n
            return n

    old = sys.stdout
    out = Out(old.fileno(), "w", closefd=False)
    stdout = io.TextIOWrapper(out, encoding=old.encoding, errors=old.errors, write_through=True)
    state = {"records": [], "size": 0, "over": 0}

    def text(value):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value if isinstance(value, str) else None

    def encode(mime, value):
        if isinstance(value, tuple) and len(value) == 2:  # (data, metadata)
            value = value[0]
        if value is None:
            return None
        if mime.startswith("image/") and mime != "image/svg+xml" and isinstance(value, (bytes, bytearray)):
            import binascii
            return binascii.b2a_base64(bytes(value), newline=False).decode("ascii")
        if mime.endswith("json") and not isinstance(value, (str, bytes)):
            import json
            return json.dumps(value, default=str)
        return text(value)

    def table(obj, pd):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        rows, columns = frame.shape
        doc = frame.iloc[:TABLE_ROWS, :TABLE_COLUMNS].to_json(orient="table", date_format="iso", default_handler=str)
        return doc[:-1] + ',"total_rows":%d,"total_columns":%d}' % (rows, columns)

    def sympy_forms(obj, sympy, data):
        data["text/plain"] = sympy.pretty(obj, use_unicode=True)
        latex = sympy.latex(obj)
        data["text/latex"] = "$\\displaystyle " + latex + "$"
        try:
            import binascii
            from matplotlib import mathtext
            png = io.BytesIO()
            mathtext.math_to_image("$" + latex + "$", png, dpi=120, format="png")
            data["image/png"] = binascii.b2a_base64(png.getvalue(), newline=False).decode("ascii")
        except Exception:
            pass  # no matplotlib, or LaTeX its mathtext does not know

    def bundle(obj):
        data = {}
        if isinstance(obj, type):  # a class: its repr methods are unbound
            return data
        mods = sys.modules
        sympy = mods.get("sympy")
        if sympy is not None and isinstance(obj, (sympy.Basic, sympy.MatrixBase)):
            try:
                sympy_forms(obj, sympy, data)
            except Exception:
                pass
            return data
        try:
            forms = obj._repr_mimebundle_()
            if isinstance(forms, tuple) and len(forms) == 2:
                forms = forms[0]
            for mime, value in dict(forms).items():
                value = encode(str(mime), value)
                if value is not None:
                    data[str(mime)] = value
        except Exception:
            pass
        pd = mods.get("pandas")
        frame = pd is not None and isinstance(obj, (pd.DataFrame, pd.Series))
        for mime, name in REPRS:
            # A table's HTML (6 ms of a 100x20 DataFrame's 20 ms) would be
            # carried, never shown: its Table Schema stands for it.
            if mime in data or (frame and mime == "text/html"):
                continue
            try:
                value = encode(mime, getattr(obj, name)())
            except Exception:
                continue
            if value is not None:
                data[mime] = value
        try:
            if frame:
                data[TABLE] = table(obj, pd)
            elif TABLE not in data and hasattr(obj, "_repr_data_resource_"):
                value = encode(TABLE, obj._repr_data_resource_())
                if value is not None:
                    data[TABLE] = value
        except Exception:
            pass
        return data

    def cut(value):
        if len(value) <= TEXT_MAX:
            return value
        return value[:TEXT_MAX] + "\n… (%d more characters not shown)" % (len(value) - TEXT_MAX)

    def show(obj, value=False):
        try:
            sys.stdout.flush()
        except Exception:
            pass
        at = out.written
        records = state["records"]
        if len(records) >= COUNT_MAX and not value:
            state["over"] += 1
            return
        data = bundle(obj)
        if "text/plain" not in data:
            try:
                data["text/plain"] = repr(obj)
            except Exception as exc:
                data["text/plain"] = "<repr of %s failed: %s: %s>" % (type(obj).__name__, type(exc).__name__, exc)
        plain = data["text/plain"] = cut(text(data["text/plain"]) or "")
        notes = []
        for mime in list(data):
            if len(data[mime]) > ENTRY_MAX:
                notes.append("[%s not shown: %d bytes, over the limit of %d]" % (mime, len(data.pop(mime)), ENTRY_MAX))
        if sum(len(k) + len(v) for k, v in data.items()) + state["size"] > RUN_MAX:
            data = {"text/plain": plain}
            notes.append("[rich forms not shown: the run's displays are over %d bytes]" % RUN_MAX)
        if notes:
            data["text/plain"] = "\n".join([plain] + notes)
        if len(data["text/plain"]) + state["size"] > RUN_MAX:
            data = {"text/plain": notes[-1]}
        state["size"] += sum(len(k) + len(v) for k, v in data.items())
        records.append((data, value, at))

    def display(*objs, **kwargs):
        for obj in objs:
            show(obj)

    def install():
        sys.stdout = stdout
        builtins.display = display

    if in_place:
        install()

    def run(codes, main):
        loop = None
        try:
            for code, value in codes:
                if code.co_flags & CO_COROUTINE:
                    if loop is None:
                        import asyncio
                        loop = asyncio.new_event_loop()
                        asyncio.set_event_loop(loop)
                    result = loop.run_until_complete(eval(code, main))
                else:
                    result = eval(code, main)
                if value and result is not None:
                    show(result, True)
        finally:
            if loop is not None:
                loop.close()

    def dump():
        records = state["records"]
        if state["over"]:
            note = "[%d more displays not shown: a run shows at most %d]" % (state["over"], COUNT_MAX)
            records.append(({"text/plain": note}, False, out.written))
            state["over"] = 0
        chunks = []
        for data, value, at in records:
            chunks.append(b"%d %d %d\n" % (len(data), value, at))
            for mime, v in data.items():
                m, v = mime.encode("utf-8", "replace"), v.encode("utf-8", "replace")
                chunks += [b"%d %d\n" % (len(m), len(v)), m, v]
        return len(records), b"".join(chunks)

    def reset():
        state["records"], state["size"], state["over"] = [], 0, 0
        out.written = 0

    return run, dump, reset, install


def _runblock_cell_compile(source, filename, flags=0):
    """A cell's code as [(code, value)], compiled with top-level await
    allowed: the statements, then, when the last one is an expression not
    ended by ";", that expression (value True) to show as IPython does."""
    codes = _runblock_cell_split(source, filename, flags)
    if codes is not None:
        return codes
    import _ast

    ONLY_AST, TOP_LEVEL_AWAIT = 0x400, 0x2000
    tree = compile(source, filename, "exec", ONLY_AST | TOP_LEVEL_AWAIT | flags, dont_inherit=True)
    last = tree.body[-1] if tree.body else None
    if isinstance(last, _ast.Expr):
        # Lines as the tokenizer counts them (\r\n, \r and \n end one).
        lines = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        rest = lines[last.end_lineno - 1][last.end_col_offset:] if last.end_lineno <= len(lines) else b""
        if not rest.lstrip().startswith(b";"):
            tree.body.pop()
        else:
            last = None
    else:
        last = None
    codes = []
    if tree.body or last is None:
        code = compile(tree, filename, "exec", TOP_LEVEL_AWAIT | flags, dont_inherit=True)
        flags |= code.co_flags & _runblock_future_flags
        codes.append((code, False))
    if last is not None:
        codes.append((compile(_ast.Expression(last.value), filename, "eval", TOP_LEVEL_AWAIT | flags, dont_inherit=True), True))
    return codes


def _runblock_cell_split(source, filename, flags):
    """_runblock_cell_compile's codes without a syntax tree, where the
    source allows (None where not): twice as fast for a small cell (0.04
    against 0.08 ms for print('hello') in a warm fork, Debian's python).
    The last line that starts in column 0 (not blank, not a comment) is
    where the last statement starts when what comes before compiles on
    its own: a newline outside brackets ends a statement, and a line
    inside brackets, a string or a backslash's continuation leaves what
    comes before it unfinished. Without ";", the rest is one statement,
    an expression exactly when it compiles as one; then its warnings,
    caught, are given again (compiled as statements, it gives its own)."""
    import sys

    warnings = sys.modules.get("warnings")
    if warnings is None or b"\r" in source or source.startswith(b"\xef\xbb\xbf") or b"coding" in source[:200]:
        return None  # other line ends, an encoding's mark or declaration
    TOP_LEVEL_AWAIT = 0x2000
    at = len(source)
    for line in reversed(source.split(b"\n")):
        at -= len(line)
        if line[:1] not in b" \t\f#":
            break
        at -= 1
    else:
        return None
    head, tail = source[:at], source[at:]
    if b";" in tail:
        return None
    codes = []
    if head.strip():
        try:
            code = compile(head, filename, "exec", TOP_LEVEL_AWAIT | flags, dont_inherit=True)
        except SyntaxError:
            return None
        flags |= code.co_flags & _runblock_future_flags
        codes.append((code, False))
    tail = b"\n" * head.count(b"\n") + tail  # its lines numbered as in the cell
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = compile(tail, filename, "eval", TOP_LEVEL_AWAIT | flags, dont_inherit=True)
        except SyntaxError:
            value = None
    if value is None:
        try:
            return codes + [(compile(tail, filename, "exec", TOP_LEVEL_AWAIT | flags, dont_inherit=True), False)]
        except SyntaxError:
            return None
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return codes + [(value, True)]


def _runblock_reseed():
    """A fork shares its parent's random state: every run would draw the
    same numbers. random reseeds its own in every fork (its after-fork
    hook, which the fork takes); numpy's global generator is reseeded here.

    numpy's global generator gets its state as its seed() without an
    argument makes it, a Mersenne Twister key of 624 words from the
    system's entropy whose first word is 0x80000000, but from os.urandom
    directly: seed() draws its words through a SeedSequence, whose numpy
    machinery copied about 0.3 MiB of the fork server's pages into every
    fork (0.1 MiB this way), a session's memory as long as it lives."""
    import posix
    import sys

    nprandom = sys.modules.get("numpy.random")
    if nprandom is None:
        return
    try:
        key = sys.modules["numpy"].frombuffer(b"\x00\x00\x00\x80" + posix.urandom(623 * 4), dtype="<u4")
        nprandom.set_state(("MT19937", key, 624, 0, 0.0))
    except Exception:
        nprandom.seed()


def _runblock_compile(source, filename="<snippet>", cell=False):
    """The snippet's code, as [(code, value)] (see _runblock_cell_compile
    for a cell; a script's value is never True): one code object or, when
    it is large, consecutive pieces of whole top-level statements:
    compiling a 1 MiB module at once peaks at ~380 MiB. A piece ends before
    a line that starts in column 0 and can start a statement; a piece that
    does not compile (the cut fell inside a string or brackets) grows to
    the next cut. All pieces are compiled before any runs, so a syntax
    error still stops the whole snippet, reported as compiling it whole
    reports it."""
    TOP_LEVEL_AWAIT = 0x2000 if cell else 0

    def whole(source, flags=0):
        if cell:
            return _runblock_cell_compile(source, filename, flags)
        return [(compile(source, filename, "exec", flags=flags, dont_inherit=True), False)]

    if len(source) <= 256 << 10:
        return whole(source)
    import re

    cuts = [m.start() + 1 for m in re.finditer(rb"\n(?=[^\s#)\]}])(?!(?:else|elif|except|finally)\b)", source)]
    cuts.append(len(source))
    codes, start, flags, line = [], 0, 0, 0
    target = 64 << 10
    i = 0
    while start < len(source):
        while cuts[i] - start < target and cuts[i] < len(source):
            i += 1
        piece = b"\n" * line + source[start:cuts[i]]
        try:
            if cuts[i] == len(source):
                codes += whole(piece, flags)
                break
            code = compile(piece, filename, "exec", flags=flags | TOP_LEVEL_AWAIT, dont_inherit=True)
        except SyntaxError:
            if cuts[i] == len(source):
                return whole(source)
            i += 1
            continue
        codes.append((code, False))
        flags |= code.co_flags & _runblock_future_flags
        line += source.count(b"\n", start, cuts[i])
        start = cuts[i]
    return codes


def _runblock_future_flags():
    import __future__

    flags = 0
    for name in __future__.all_feature_names:
        flags |= getattr(__future__, name).compiler_flag
    return flags


_runblock_future_flags = _runblock_future_flags()


def _runblock_unpack(data, workdir):
    # The request is "<code bytes> <args> <files> <flags>\n" then the code,
    # each argument as "<bytes>\n<arg>", each file as "<path bytes> <bytes>\n<path><content>".
    # The service has checked the paths (relative, clean, no "..").
    # Returns the code, the arguments, whether the reply renders colour,
    # whether the snippet runs as a cell (not as a script), and a
    # launched request's mode (its first argument; see _runblock_launch),
    # else None.
    import posix

    COLOUR, CELL, LAUNCH = 1, 2, 4  # protocol: RequestColour RequestCell RequestLaunch

    def header(pos):
        end = data.index(b"\n", pos)
        return [int(x) for x in data[pos:end].split()], end + 1

    (ncode, nargs, nfiles, flags), pos = header(0)
    source = data[pos:pos + ncode]
    pos += ncode
    args = []
    for _ in range(nargs):
        (n,), pos = header(pos)
        args.append(data[pos:pos + n].decode("utf-8", "surrogateescape"))
        pos += n
    for _ in range(nfiles):
        (npath, n), pos = header(pos)
        path = data[pos:pos + npath].decode("utf-8", "surrogateescape")
        pos += npath
        parts = path.split("/")
        d = workdir
        for part in parts[:-1]:
            d += "/" + part
            try:
                posix.mkdir(d, 0o755)
            except FileExistsError:
                pass
        fd = posix.open(workdir + "/" + path, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(data)[pos:pos + n]
            while view:
                view = view[posix.write(fd, view):]
        finally:
            posix.close(fd)
        pos += n
    launch = args.pop(0) if flags & LAUNCH else None
    return source, args, bool(flags & COLOUR), bool(flags & CELL), launch


def _runblock_codes(source, filename, args, cell, launch, main):
    """A request's codes, with the source and the file name its traceback
    names (_runblock_report): a snippet's, compiled as filename
    (_runblock_compile), or a launched request's (launch its mode, see
    _runblock_launch)."""
    if launch is None:
        return _runblock_compile(source, filename, cell), source, filename
    return _runblock_launch(launch, source, args, cell, main)


def _runblock_launch(mode, target, args, cell, main):
    """A launched request (executor.Request.Launch), run as `python -c
    CODE`, `python FILE` or `python -m MODULE` would (mode "code", "file"
    or "module"; target is the code, the file's path or the module's
    name; args the program's): python's sys.argv and sys.path[0], a
    file's __file__ in main. Returns its codes (_runblock_compile's: a
    cell's code, as a snippet's, may await at its top level and shows
    its last expression's value; a file or a module shows none), its
    source and the file name of its code, for _runblock_report: None for
    a module, which runpy runs (the codes are the guard's call of it)."""
    import linecache
    import sys

    name = target.decode("utf-8", "surrogateescape")
    sys.argv = ["-c" if mode == "code" else name] + args
    # As python does: the script's directory, or the work dir, comes
    # first (relative: the guard takes os.getcwd away); once, in a
    # session's launches one after another.
    first = name.rpartition("/")[0] if mode == "file" else ""
    if sys.path[:1] != [first]:
        sys.path.insert(0, first)
    if mode == "module":
        call = "__import__('runpy').run_module(%r, run_name='__main__', alter_sys=True)" % name
        return [(compile(call, "<runblock>", "exec", dont_inherit=True), False)], b"", None
    if mode == "file":
        try:
            with open(name, "rb") as src:
                source = src.read()
        except OSError as exc:
            print("python: can't open file %r: [Errno %d] %s" % (name, exc.errno, exc.strerror), file=sys.stderr)
            raise SystemExit(2)
        main["__file__"] = filename = name
    else:
        source, filename = target, "<string>"
        linecache.cache[filename] = (len(source), None, source.decode("utf-8", "replace").splitlines(True), filename)
    return _runblock_compile(source, filename, cell and mode == "code"), source, filename


def _runblock_report(exc, tb, source, filename="<snippet>", colour=False):
    """Prints the snippet's traceback (filename None: a launched
    module's, see _runblock_launch), in colour when the reply renders it
    and the interpreter colours tracebacks (3.13 on: -I keeps
    PYTHON_COLORS out, and stderr is no terminal, so it is asked)."""
    import linecache
    import sys
    import traceback

    # Leave the guard's own frames (a refused function) out of tracebacks.
    def strip(t):
        frames = []
        while t is not None:
            if t.tb_frame.f_code.co_filename != "<runblock>":
                frames.append(t)
            t = t.tb_next
        for a, b in zip(frames, frames[1:] + [None]):
            a.tb_next = b
        return frames[0] if frames else None

    tb = strip(tb)
    # A run's runner is not the snippet's: its traceback starts at the
    # snippet's first frame, past asyncio's loop (a cell's top-level
    # await) or, for a launched module, past runpy (all of it when runpy
    # found no module to run).
    first = tb
    if filename is None:
        while first is not None and first.tb_frame.f_globals.get("__name__") == "runpy":
            first = first.tb_next
        tb = first
    else:
        while first is not None and first.tb_frame.f_code.co_filename != filename:
            first = first.tb_next
        tb = first or tb
    seen = {id(exc)}
    chained = exc.__cause__ or exc.__context__
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        chained.__traceback__ = strip(chained.__traceback__)
        chained = chained.__cause__ or chained.__context__

    if filename is not None:
        lines = source.decode("utf-8", "replace").splitlines(True)
        linecache.cache[filename] = (len(source), None, lines, filename)
    kwargs = {"colorize": True} if colour and sys.version_info >= (3, 13) else {}
    try:
        traceback.print_exception(type(exc), exc, tb, **kwargs)
    except MemoryError:
        sys.stderr.write(type(exc).__name__ + "\n")
    sys.stderr.flush()


_runblock_run()
