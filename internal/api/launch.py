# runblock launcher: runs a snippet with files beside it and a sys.argv, as
# `python [-c CODE | -m MODULE | FILE] ARGS...` would, for the API's
# requests that are more than a plain snippet. The sandbox has placed the
# files; its arguments are the mode ("code", "file" or "module"), the
# target (the code, the file or the module) and the program's own argv.
# It runs inside the guard, in the snippet's own __main__; it leaves no
# name behind, and tracebacks start in the snippet, as with a plain run.


def _runblock_launch():
    import os
    import sys

    mode, target = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[3:]
    main = sys.modules["__main__"].__dict__
    main.pop("_runblock_launch", None)
    # As python does: the script's directory, or the work dir, comes first
    # (relative: the guard takes os.getcwd away).
    sys.path.insert(0, os.path.dirname(target) if mode == "file" else "")
    try:
        if mode == "module":
            import runpy

            runpy.run_module(target, run_name="__main__", alter_sys=True)
            return
        if mode == "file":
            try:
                with open(target, "rb") as src:
                    source = src.read()
            except OSError as exc:
                print("python: can't open file %r: [Errno %d] %s" % (target, exc.errno, exc.strerror), file=sys.stderr)
                sys.exit(2)
            main["__file__"] = target
            name = target
        else:
            import linecache

            source = target
            name = "<string>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        value = None
        if mode == "code":
            # The code's last expression, as the launcher's value: a cell
            # (not a script) shows it, as it shows a plain snippet's.
            import _ast

            tree = compile(source, name, "exec", 0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
            last = tree.body[-1] if tree.body else None
            lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as the tokenizer counts them
            if isinstance(last, _ast.Expr) and last.end_lineno <= len(lines):
                if not lines[last.end_lineno - 1].encode()[last.end_col_offset:].lstrip().startswith(b";"):
                    value = _ast.Expression(tree.body.pop().value)
            code = compile(tree, name, "exec", dont_inherit=True)
        else:
            code = compile(source, name, "exec")
        del source, target, mode
        exec(code, main)
        if value is not None:
            return eval(compile(value, name, "eval", dont_inherit=True), main)
    except (SystemExit, MemoryError, KeyboardInterrupt):
        raise
    except BaseException as exc:
        import traceback

        tb = exc.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename == "<snippet>" or "runpy" in tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        sys.exit(1)
