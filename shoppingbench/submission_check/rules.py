"""The rules static analysis applies: names of rules, their categories, and what each one forbids.

Agents legitimately need ``json``, ``re``, ``math``, ``httpx`` (or the SDK's proxy client: the sandbox
lets network traffic reach the proxy only), ``os.environ``/``os.getenv``, threads and ``asyncio``
coroutines. What is listed here has no place in a shopping agent or could escape or game the sandbox.
"""

from __future__ import annotations

from typing import Final

from shoppingbench.submission_check.models import Category, Finding

RULES: Final[dict[str, tuple[Category, str]]] = {
    "size": ("security", "the file is larger than the limit"),
    "encoding": ("security", "the file is not UTF-8 text (or contains null bytes)"),
    "syntax": ("security", "the file is not valid Python 3.11"),
    "entry_point": ("security", "no top-level agent_main"),
    "process": ("security", "starting or signalling processes"),
    "network": ("security", "raw sockets or non-HTTP network protocols"),
    "native_code": ("security", "loading native code (ctypes, cffi)"),
    "serialization": ("security", "pickle-style deserialisation, which runs code"),
    "dynamic_import": ("security", "importing modules by computed name or through the import machinery"),
    "dynamic_code": ("security", "running code built at run time (exec/eval/compile of non-literals)"),
    "builtins_access": ("security", "reaching the builtins namespace directly"),
    "introspection": ("security", "frame, class-hierarchy or interpreter internals used to escape limits"),
    "module_alias": ("security", "a sensitive module used as a value, hiding which of its functions run"),
    "file_write": ("security", "creating, writing, moving or deleting files"),
    "obfuscation": ("integrity", "encoding, compression or text tricks that hide code from review"),
    "encoded_blob": ("integrity", "a long encoded literal (base64, hex, binary)"),
    "embedded_product_id": ("integrity", "a product id of a known suite in the file (a hard-coded answer)"),
}


def finding(rule: str, line: int | None, message: str) -> Finding:
    category, _ = RULES[rule]
    return Finding(rule=rule, line=line, category=category, message=message)


SELF_DESCRIBING: Final = frozenset({"syntax"})
"""Rules whose message says what is wrong and where (``syntax error at line 3: expected ':'``)."""


def describe(found: Finding) -> str:
    """A finding as one line for the author of the file: ``[category] rule (line N): message``, or the
    message alone when it says everything (a syntax error, with its line)."""
    if found.rule in SELF_DESCRIBING:
        return found.message
    where = f"line {found.line}" if found.line is not None else "file"
    return f"[{found.category}] {found.rule} ({where}): {found.message}"


PROHIBITED_MODULES: Final[dict[str, str]] = {
    **dict.fromkeys(("subprocess", "multiprocessing", "pty", "pexpect", "sh", "plumbum", "_posixsubprocess",
                     "posix", "nt", "_winapi", "concurrent.futures.process"), "process"),
    **dict.fromkeys(("socket", "_socket", "ssl", "_ssl", "socketserver", "http.server", "xmlrpc", "ftplib",
                     "smtplib", "smtpd", "telnetlib", "poplib", "imaplib", "nntplib", "paramiko",
                     "websocket", "websockets", "asyncssh", "select", "selectors"), "network"),
    **dict.fromkeys(("ctypes", "_ctypes", "cffi", "_cffi_backend", "mmap"), "native_code"),
    **dict.fromkeys(("pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib",
                     "copyreg"), "serialization"),
    **dict.fromkeys(("importlib", "imp", "runpy", "zipimport", "pkgutil", "code", "codeop", "modulefinder"),
                    "dynamic_import"),
    **dict.fromkeys(("builtins", "__builtin__"), "builtins_access"),
    **dict.fromkeys(("base64", "binascii", "codecs", "zlib", "bz2", "lzma", "gzip", "zipfile", "tarfile",
                     "quopri", "uu", "encodings"), "obfuscation"),
}
"""Modules whose import alone rejects the file (a name or any submodule of it)."""

PROHIBITED_ATTRIBUTES: Final[dict[str, dict[str, str]]] = {
    "os": {
        **dict.fromkeys(("system", "popen", "startfile", "fork", "forkpty", "vfork", "kill", "killpg",
                         "posix_spawn", "posix_spawnp", "plock", "exec*", "spawn*", "setuid", "setgid",
                         "seteuid", "setegid", "setreuid", "setregid", "setresuid", "setresgid", "openpty",
                         "pidfd_open", "register_at_fork"), "process"),
        **dict.fromkeys(("remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace",
                         "mkdir", "makedirs", "mkfifo", "mknod", "link", "symlink", "chmod", "lchmod",
                         "fchmod", "chown", "lchown", "fchown", "chroot", "truncate", "ftruncate", "open",
                         "write", "pwrite",
                         "writev", "pwritev", "fdopen", "utime", "setxattr", "removexattr", "sendfile",
                         "copy_file_range", "dup2", "memfd_create"), "file_write"),
    },
    "sys": {**dict.fromkeys(("modules", "meta_path", "path_hooks", "path_importer_cache"), "dynamic_import"),
            **dict.fromkeys(("_getframe", "settrace", "setprofile", "addaudithook", "_current_frames"),
                            "introspection")},
    "shutil": dict.fromkeys(("copy", "copy2", "copyfile", "copytree", "move", "rmtree", "make_archive",
                             "unpack_archive", "chown", "copymode", "copystat"), "file_write"),
    "tempfile": dict.fromkeys(("mkstemp", "mkdtemp", "mktemp", "NamedTemporaryFile", "TemporaryFile",
                               "SpooledTemporaryFile", "TemporaryDirectory"), "file_write"),
    "asyncio": {"create_subprocess_exec": "process", "create_subprocess_shell": "process",
                "open_connection": "network", "start_server": "network", "open_unix_connection": "network",
                "start_unix_server": "network"},
    "concurrent.futures": {"ProcessPoolExecutor": "process"},
    "logging": {"FileHandler": "file_write"},
    "logging.handlers": {
        **dict.fromkeys(("RotatingFileHandler", "TimedRotatingFileHandler", "WatchedFileHandler"),
                        "file_write"),
        **dict.fromkeys(("SocketHandler", "DatagramHandler", "SysLogHandler", "SMTPHandler", "HTTPHandler"),
                        "network")},
    "io": {"FileIO": "file_write"},
    "urllib.request": {"urlretrieve": "file_write"},
    "types": {"CodeType": "dynamic_code", "FunctionType": "dynamic_code", "LambdaType": "dynamic_code"},
    "gc": dict.fromkeys(("get_objects", "get_referrers", "get_referents"), "introspection"),
    "inspect": dict.fromkeys(("currentframe", "stack", "trace", "getouterframes", "getinnerframes"),
                             "introspection"),
}
"""Members that reject the file wherever they are named (``name*`` matches by prefix)."""

SENSITIVE_MODULES: Final = frozenset(PROHIBITED_ATTRIBUTES)
"""Modules that may only be used as ``module.member``, so the member is visible to the rules above."""

ANY_RECEIVER_ATTRIBUTES: Final[dict[str, str]] = {
    **dict.fromkeys(("__subclasses__", "__globals__", "__builtins__", "__code__", "__mro__", "__bases__",
                     "__base__", "__loader__", "__import__", "__reduce__", "__reduce_ex__",
                     "__getattribute__",
                     "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code",
                     "cr_frame", "cr_code", "ag_frame", "tb_frame", "co_code", "mro"), "introspection"),
    **dict.fromkeys(("write_text", "write_bytes", "touch", "symlink_to", "hardlink_to", "link_to", "unlink",
                     "rmdir", "mkdir", "chmod", "lchmod"), "file_write"),
    **dict.fromkeys(("popen", "subprocess_exec", "subprocess_shell", "posix_spawn", "forkpty"), "process"),
}
"""Attribute names rejected on any object: interpreter internals, ``pathlib`` writes, process starts."""

DYNAMIC_CODE_BUILTINS: Final = frozenset({"exec", "eval", "compile"})
ATTRIBUTE_FUNCTIONS: Final = frozenset({"getattr", "setattr", "delattr", "hasattr"})
NAMESPACE_BUILTINS: Final[dict[str, str]] = {"globals": "builtins_access", "vars": "builtins_access"}
"""Builtins that hand out a namespace as a dict: any member, ``__builtins__`` included, by string key."""
ESCAPE_NAMES: Final[dict[str, str]] = {"__import__": "dynamic_import", "__builtins__": "builtins_access",
                                       "__loader__": "dynamic_import", "__spec__": "dynamic_import"}
"""Bare names (and string literals naming them) that reach the import machinery or builtins."""

ESCAPE_LITERALS: Final = frozenset(ESCAPE_NAMES) | frozenset(
    name for name, rule in ANY_RECEIVER_ATTRIBUTES.items()
    if rule == "introspection" and name.startswith("__"))
"""String literals that only serve ``getattr``-style access to escape hatches."""

WRITE_MODE_CHARACTERS: Final = frozenset("wax+")
BIDI_CONTROLS: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional overrides make code display differently from how it runs (CVE-2021-42574)."""
