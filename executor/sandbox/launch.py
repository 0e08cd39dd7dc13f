# runblock launcher: runs a launched request (executor.Request.Launch) as
# `python [-c CODE | -m MODULE | FILE] ARGS...` would. The sandbox has
# placed the files and runs this in place of the request's code (see
# launch.go); its arguments are the mode ("code", "file" or "module"),
# "cell" or "script", the target (the code, the file or the module) and
# the program's sys.argv[1:]. It runs inside the guard, in the snippet's
# own __main__; it leaves no name behind, and tracebacks start in the
# snippet, as with a plain run. A cell's code, as a snippet's, may await
# at its top level, and its last expression's value is shown.


def _runblock_launch():
    import os
    import sys

    mode, cell, target = sys.argv[1], sys.argv[2] == "cell", sys.argv[3]
    sys.argv = ["-c" if mode == "code" else target] + sys.argv[4:]
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
        # A cell's code may await at its top level (PyCF_ALLOW_TOP_LEVEL_AWAIT).
        flags = 0x2000 if cell and mode == "code" else 0
        if mode == "code":
            # The code's last expression, as the launcher's value: a cell
            # (not a script) shows it, as it shows a plain snippet's.
            import _ast

            tree = compile(source, name, "exec", 0x400 | flags, dont_inherit=True)  # ast.PyCF_ONLY_AST
            last = tree.body[-1] if tree.body else None
            lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as the tokenizer counts them
            if isinstance(last, _ast.Expr) and last.end_lineno <= len(lines):
                if not lines[last.end_lineno - 1].encode()[last.end_col_offset:].lstrip().startswith(b";"):
                    value = compile(_ast.Expression(tree.body.pop().value), name, "eval", flags, dont_inherit=True)
            code = compile(tree, name, "exec", flags, dont_inherit=True)
        else:
            code = compile(source, name, "exec")
        del source, target, mode, cell
        loop = None
        try:
            for part in (code, value):
                if part is None:
                    continue
                if part.co_flags & 0x80:  # CO_COROUTINE: it awaits
                    if loop is None:
                        import asyncio

                        loop = asyncio.new_event_loop()
                        asyncio.set_event_loop(loop)
                    result = loop.run_until_complete(eval(part, main))
                else:
                    result = eval(part, main)
            if value is not None:
                return result
        finally:
            if loop is not None:
                loop.close()
    except (SystemExit, MemoryError, KeyboardInterrupt):
        raise
    except BaseException as exc:
        import traceback

        tb = exc.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename == "<snippet>" or "runpy" in tb.tb_frame.f_code.co_filename or "asyncio" in tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        sys.exit(1)
