# runblock guard prelude and runner.
#
# Started as `python -I -S -c <this file> RLIMITS [site-dir ...]` (in effect:
# the service passes this file compiled once, see guardLoader in plan.go)
# with these fds (RLIMITS is "resource:limit,..." set as soft and hard limits):
#   0 stdin pipe, 1 stdout pipe, 2 stderr pipe,
#   3 request pipe: the snippet's source, until EOF,
#   4 status pipe: this runner writes "ready" once the guard is in place and
#     "started" once it has the snippet; it then closes 3 and 4, so the
#     snippet holds 0, 1 and 2 only (any other descriptor is closed first).
# Nothing written here decides the verdict: the service takes it from wait
# statuses and its own and the init's accounting.
# The service pre-starts the interpreter, waits for "ready", then hands over
# the snippet. Everything here runs before the hand-over, so none of it counts
# against the snippet's timeout.
#
# The neutralisations are those of the original execute_code (human-eval's
# reliability_guard). They are a courtesy against accidents, not the security
# boundary: the kernel isolation around this process is.


def _runblock_run():
    import builtins
    import faulthandler
    import gc
    import posix
    import sys

    import resource

    read, write, close = posix.read, posix.write, posix.close
    # The stages mark everything else close-on-exec; the tier without them
    # relies on this.
    posix.closerange(5, 1 << 30)
    posix.set_inheritable(3, False)
    posix.set_inheritable(4, False)
    for item in sys.argv[1].split(","):
        res, limit = map(int, item.split(":"))
        resource.setrlimit(res, (limit, limit))
    del resource
    sys.path.extend(sys.argv[2:])
    sys.argv = ["-c"]

    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None

    # The snippet's environment already has OMP_NUM_THREADS=1.
    def fix_os(module):
        for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                     "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                     "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                     "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
            setattr(module, name, None)

    # os, shutil and subprocess cost ~1 ms and ~12 ms to import, so they are
    # patched when first imported instead of up front: the snippet sees the
    # same modules.
    def fix_shutil(module):
        for name in ("rmtree", "move", "chown"):
            setattr(module, name, None)

    def fix_subprocess(module):
        module.Popen = None

    fixes = {"os": fix_os, "shutil": fix_shutil, "subprocess": fix_subprocess}

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

    write(4, b"ready\n")
    chunks = []
    while True:
        chunk = read(3, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    close(3)
    write(4, b"started\n")
    close(4)
    source = b"".join(chunks)
    del chunks

    # Fresh globals {'__name__': '__main__'} that are also sys.modules['__main__'],
    # so pickling and multiprocessing find the snippet's functions.
    module = type(sys)("__main__")
    main = module.__dict__
    main.clear()
    main["__name__"] = "__main__"
    main["__builtins__"] = builtins
    sys.modules["__main__"] = module
    try:
        codes = _runblock_compile(source)
    except SyntaxError as exc:
        _runblock_report(exc, None, source)
        sys.exit(1)
    except MemoryError:
        sys.stderr.write("MemoryError\n")
        sys.exit(1)
    # Everything alive so far lives until exit; out of the collector's
    # sight, the collections at interpreter exit skip it (~1 ms of CPU).
    gc.freeze()
    del gc
    try:
        for code in codes:
            exec(code, main)
    except SystemExit:
        raise
    except BaseException as exc:
        # Drop this runner's frame so the traceback starts in the snippet.
        _runblock_report(exc, exc.__traceback__.tb_next, source)
        sys.exit(1)


def _runblock_compile(source):
    """The snippet's code, as one code object or, when it is large, as
    consecutive pieces of whole top-level statements: compiling a 1 MiB
    module at once peaks at ~380 MiB. A piece ends before a line that starts
    in column 0 and can start a statement; a piece that does not compile
    (the cut fell inside a string or brackets) grows to the next cut. All
    pieces are compiled before any runs, so a syntax error still stops the
    whole snippet, reported as compiling it whole reports it."""
    if len(source) <= 256 << 10:
        return [compile(source, "<snippet>", "exec")]
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
            code = compile(piece, "<snippet>", "exec", flags=flags, dont_inherit=True)
        except SyntaxError:
            if cuts[i] == len(source):
                return [compile(source, "<snippet>", "exec")]
            i += 1
            continue
        codes.append(code)
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


def _runblock_report(exc, tb, source):
    import linecache
    import sys
    import traceback

    lines = source.decode("utf-8", "replace").splitlines(True)
    linecache.cache["<snippet>"] = (len(source), None, lines, "<snippet>")
    try:
        traceback.print_exception(type(exc), exc, tb)
    except MemoryError:
        sys.stderr.write(type(exc).__name__ + "\n")
    sys.stderr.flush()


_runblock_run()
