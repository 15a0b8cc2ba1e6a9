"""The e2e scripts' pass/fail list: each check prints one line, and a script
exits non-zero when any check failed."""


class Checks:
    """Call with (ok, what); `failures` lists what failed, in order."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)
        return ok

    def exit_code(self):
        """Lists what failed and returns the script's exit code."""
        for f in self.failures:
            print("FAIL", f)
        return 1 if self.failures else 0
