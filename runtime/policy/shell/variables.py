"""Variable tables: which variables make programs run or load code, or name files they
write or read, and the checks applied wherever a line sets one (assignments, ``read``,
``declare``, ``for``, ``${NAME:=...}`` ...)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from runtime.policy.shell.expansions import PURE_ARITH, SAFE_NAME, SAFE_NUMBER, TEST_ARITH_OPERATORS, arith_problem
from runtime.policy.shell.record import Context
from runtime.policy.shell.words import RUNTIME, Word, short

# Variables whose value a program (or the shell) runs as a command line.
_COMMAND_VARIABLES = frozenset(
    {
        "PROMPT_COMMAND", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "MANPAGER", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "RSYNC_RSH",
        "CVS_RSH",
        # build tools run these (make's implicit rules, configure, cargo, pip builds)
        "CC", "CXX", "CPP", "LD", "AR", "AS", "FC", "MAKE", "SHELL", "RUSTC", "RUSTDOC", "RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
    }
)  # fmt: skip
_COMMAND_SUFFIXES = ("_COMMAND", "_CMD", "_PAGER", "_EDITOR", "ASKPASS")
# Prompts: their command substitutions run when the shell prints them (PS4 under set -x).
_PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
# Variables that make the shell or a program load code, settings or programs from
# somewhere this splitter cannot see: setting one (any way, to any value) is a problem.
# Names starting with _CODE_PREFIXES count too. Keep docs/command-lines.md in step.
_CODE_VARIABLES = frozenset(
    {
        # shell start-up and behaviour
        "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PATH", "IFS", "ZDOTDIR", "INPUTRC",
        # where programs find their configuration (a .gitconfig can run commands)
        "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS", "GIT_CONFIG", "GIT_DIR",
        "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "CURL_HOME", "WGETRC", "SYSTEM_WGETRC", "RIPGREP_CONFIG_PATH",
        "KUBECONFIG", "DOCKER_CONFIG", "CARGO_HOME", "GNUPGHOME", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
        "PIP_CONFIG_FILE", "UV_CONFIG_FILE", "POETRY_CONFIG_DIR", "GOENV", "GOFLAGS", "GOTOOLCHAIN", "GOROOT",
        "VIMINIT", "EXINIT", "GVIMINIT", "MYVIMRC", "VIMRUNTIME", "VIM", "EMACSLOADPATH", "AWKPATH", "AWKLIBPATH",
        "GLIBC_TUNABLES",
        # options a program reads from the environment, as if given on its command line
        "TAR_OPTIONS", "GREP_OPTIONS", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS",
        "MAKEFILES", "LESS", "LESSKEY", "LESSKEYIN", "LESSKEY_CONTENT", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM", "MANOPT",
        "ZIPOPT", "ZIP", "UNZIP", "UNZIPOPT", "GZIP", "BZIP", "BZIP2", "XZ_OPT", "XZ_DEFAULTS", "CFLAGS", "CXXFLAGS",
        "CPPFLAGS", "LDFLAGS", "RUSTFLAGS", "NODE_REPL_EXTERNAL_MODULE",
        # libraries and interpreter start-up
        "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH",
        "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
        "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "NODE_OPTIONS", "NODE_PATH",
        "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERL5SHELL", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH",
        "BUNDLE_GEMFILE", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
        # helpers other programs start
        "LESSOPEN", "LESSCLOSE", "BROWSER",
    }
)  # fmt: skip
# GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>, GIT_CONFIG_VALUE_<n> ...
_CODE_PREFIXES = ("BASH_FUNC_", "GIT_CONFIG_", "DYLD_", "PIP_", "NPM_CONFIG_", "YARN_", "CARGO_")
# git reads many variables that point it at other repositories, configs, object stores
# or programs (GIT_COMMON_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_ALLOW_PROTOCOL ...):
# every GIT_ name is a problem but these, which only change messages, identities and
# limits, the command variables above, and the trace variables (a file git writes).
_GIT_SAFE_VARIABLES = frozenset(
    {
        "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "GIT_FLUSH", "GIT_MERGE_VERBOSITY",
        "GIT_MERGE_AUTOEDIT", "GIT_NO_REPLACE_OBJECTS", "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_PAGER_IN_USE", "GIT_ADVICE", "GIT_PROGRESS_DELAY",
        "GIT_DEFAULT_HASH", "GIT_DEFAULT_REF_FORMAT", "GIT_REFLOG_ACTION", "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_HTTP_USER_AGENT", "GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME",
        "GIT_HTTP_MAX_REQUESTS", "GIT_CURL_VERBOSE", "GIT_REDACT_COOKIES", "GIT_TRACE_REDACT", "GIT_TRACE2_REDACT",
        "GIT_TRACE2_CONFIG_PARAMS", "GIT_TRACE2_ENV_VARS", "GIT_TRACE2_MAX_FILES", "GIT_TRACE2_BRIEF",
        "GIT_TRACE2_PERF_BRIEF", "GIT_TRACE2_EVENT_BRIEF", "GIT_TRACE2_EVENT_NESTING", "GIT_PROTOCOL_FROM_USER",
        "GIT_SSL_NO_VERIFY", "GIT_QUIET",
    }
)  # fmt: skip
# Variables naming a file (or folder) a program writes: the value is judged as a write,
# like a redirection.
_WRITTEN_FILE_VARIABLES = frozenset(
    {
        "SSLKEYLOGFILE", "LD_DEBUG_OUTPUT", "LD_PROFILE_OUTPUT", "TAPE", "TMPDIR", "TMP", "TEMP", "TEMPDIR",
        "HISTFILE", "LESSHISTFILE", "NODE_REPL_HISTORY", "PYTHON_HISTORY", "SQLITE_HISTORY", "PSQL_HISTORY",
        "MYSQL_HISTFILE", "REDISCLI_HISTFILE", "COVERAGE_FILE", "PYTHONPYCACHEPREFIX", "CCACHE_DIR", "XDG_CACHE_HOME",
        "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    }
)  # fmt: skip
# Variables naming a file a program reads (certificates, netrc): judged as a read.
_READ_FILE_VARIABLES = frozenset(
    {
        "CURL_CA_BUNDLE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "NETRC",
        "HOSTALIASES",
    }
)
# LD_ names the dynamic loader reads only as switches; any other LD_ name loads code or writes a file.
_LD_SWITCHES = frozenset(
    {
        "LD_DEBUG",
        "LD_BIND_NOW",
        "LD_BIND_NOT",
        "LD_WARN",
        "LD_VERBOSE",
        "LD_SHOW_AUXV",
        "LD_TRACE_LOADED_OBJECTS",
        "LD_DYNAMIC_WEAK",
        "LD_POINTER_GUARD",
    }
)
# Values of GIT_TRACE* that send the trace to standard error or a descriptor, not a file.
_TRACE_SWITCHES = frozenset(
    {"", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "true", "false", "yes", "no", "on", "off"}
)
# Characters an IFS value may hold and still only remove split points from the default.
_DEFAULT_IFS = frozenset(" \t\n")
# System directories a literal PATH may list (``env -i PATH=/bin cmd``); anything else
# (``.``, an empty entry, a relative or workspace directory, an expansion) is a problem.
_SYSTEM_PATH_DIRS = frozenset({"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})


def _loads_code(name: str, value: str, literal: bool) -> bool:
    """Whether setting ``name`` to ``value`` can make the shell or a program load unseen code."""
    if name == "IFS":
        return not (literal and set(value) <= _DEFAULT_IFS)
    if name == "PATH":
        return not (literal and all(directory.rstrip("/") in _SYSTEM_PATH_DIRS for directory in value.split(":")))
    if name in _CODE_VARIABLES or name.upper().startswith(_CODE_PREFIXES):
        return True
    if name.startswith("GIT_"):
        return name not in _GIT_SAFE_VARIABLES and not name.startswith("GIT_TRACE") and not _runs_value(name)
    if name.startswith("LD_"):
        return name not in _LD_SWITCHES and name not in _WRITTEN_FILE_VARIABLES
    return False


def _runs_value(name: str) -> bool:
    """Whether the shell or a program runs ``name``'s value as a command line or prompt."""
    return name in _COMMAND_VARIABLES or name.endswith(_COMMAND_SUFFIXES) or name in _PROMPT_VARIABLES


def _names_file(name: str) -> str | None:
    """``>`` when a program writes the file ``name``'s value names, ``<`` when it reads it."""
    if name in _WRITTEN_FILE_VARIABLES or (name.startswith("GIT_TRACE") and name not in _GIT_SAFE_VARIABLES):
        return ">"
    if name in _READ_FILE_VARIABLES:
        return "<"
    return None


def check_variable(name: str, value: str, literal: bool, ctx: Context) -> None:
    """Some variables make programs run their value, or files it names, as code, or
    write or read the file it names.

    A command-line value (``GIT_PAGER=cat``) is split and listed like any command;
    one that is only known at run time, or that names code elsewhere, is a problem.
    A variable can be both (``PROMPT_COMMAND``): then it is a problem and its
    commands are listed. A file a variable names (``GIT_TRACE=/tmp/t``, ``TMPDIR=x``)
    is listed like a redirection, ``(">", file)`` or ``("<", file)``.
    """
    if _loads_code(name, value, literal):
        ctx.problem(
            f"the variable {name} is set, and it changes which code, settings or programs the shell and the programs "
            "it starts load, which this check cannot see"
        )
    if _runs_value(name):
        if not literal:
            ctx.problem(f"the variable {name} holds a command that is only known at run time")
        elif name in _PROMPT_VARIABLES:
            ctx.scan_expansions(value)
        else:
            ctx.parse_line(value)
    direction = _names_file(name)
    if direction is not None:
        target = value
        if name.startswith("GIT_TRACE"):
            if target.lower() in _TRACE_SWITCHES:
                return
            target = re.sub(r"^af_unix:(?:stream:|dgram:)?", "", target)
        if target:
            # Like an assignment's value, a leading ~ is expanded: somewhere only known at run time.
            ctx.emit((direction, target), "l" + ("l" if literal and not target.startswith("~") else RUNTIME))


def check_assigned_names(what: str, names: Sequence[str], ctx: Context) -> None:
    """``what`` assigns the variables ``names`` a value only known at run time."""
    for variable in names:
        name = variable.partition("[")[0]
        if _loads_code(name, "", False) or _runs_value(name) or _names_file(name):
            ctx.problem(
                f"{what} sets the variable {name} to a value only known at run time, and that variable makes the "
                "shell or programs run or load code, or names a file they write or read"
            )


def check_names(name: str, names: Sequence[str], ctx: Context) -> None:
    for variable in names:
        if not SAFE_NAME.fullmatch(variable):
            ctx.problem(
                f"{name} is given the variable name {short(variable, 40)!r}, whose subscript is evaluated as "
                "arithmetic and can run commands"
            )


def check_set_names(name: str, names: Sequence[str], ctx: Context) -> None:
    """``name`` stores run-time values in the variables ``names``."""
    check_names(name, names, ctx)
    check_assigned_names(name, names, ctx)


def check_test_operands(name: str, tokens: Sequence[Word], ctx: Context) -> None:
    """``-v NAME`` subscripts are arithmetic; so are the operands of -eq and friends inside [[ ]]."""
    for k, token in enumerate(tokens):
        if token.value == "-v" and k + 1 < len(tokens):
            check_names(name, [tokens[k + 1].value], ctx)
        if name == "[[" and token.is_plain and token.value in TEST_ARITH_OPERATORS:
            for operand in (tokens[k - 1] if k else None, tokens[k + 1] if k + 1 < len(tokens) else None):
                if operand is None:
                    continue
                if SAFE_NUMBER.fullmatch(operand.value) or (
                    not operand.expanded and PURE_ARITH.fullmatch(operand.value)
                ):
                    continue
                ctx.problem(arith_problem(f"[[ {operand.value} {token.value} ]]"))
