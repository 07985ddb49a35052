"""The per-program table behind :mod:`runtime.policy.programs`: for each program an agent
commonly runs, which options take a value, which read a file, write one, run code or
change directory, and what its operands are.

Data, mostly: the scanner that reads an argv with it lives in ``programs.py``. To teach
toolrt a program, add an entry here (and a case to ``tests/policy/test_programs.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.policy import scripts
from runtime.policy.program_kinds import (
    ABBREVIATION_MIN,
    CODE,
    CODE_FILE,
    DIR,
    FOLLOW,
    GUARDED,
    LINK,
    READ,
    SCRIPT,
    SYSTEM,
    WRITE,
    Option,
    Program,
    opts,
)
from runtime.policy.table_git import GIT, GIT_OTHER
from runtime.policy.table_net import CURL, WGET
from runtime.policy.table_values import curl_globs, date_or_file, or_default

__all__ = [
    "ABBREVIATION_MIN",
    "CODE",
    "CODE_FILE",
    "DIR",
    "FOLLOW",
    "GIT",
    "GIT_OTHER",
    "GUARDED",
    "LINK",
    "READ",
    "SCRIPT",
    "SYSTEM",
    "WRITE",
    "Option",
    "Program",
    "curl_globs",
]

# -- sed and awk programs: see runtime/policy/scripts.py ----------------------------------

_sed_script = scripts.sed_script
_awk_script = scripts.awk_program


# -- the table --------------------------------------------------------------------------

_GREP = Program(
    options=opts(
        ("-R --dereference-recursive", FOLLOW, "no"),
        ("-f --file --exclude-from", READ, "yes"),
        (
            "-e --regexp -m --max-count -A -B -C --after-context --before-context --context -d -D --directories"
            " --devices"
            " --include --exclude --exclude-dir --label --binary-files --group-separator",
            None,
            "yes",
        ),
        ("--color --colour", None, "attached"),
        (
            "-r --recursive -n -i -l -L -c -v -w -x -o -q -s -h -H -E -F -G -P -z -Z -a -I -b -T -U --null"
            " --line-number --ignore-case --no-ignore-case --files-with-matches --files-without-match --count"
            " --invert-match --word-regexp --line-regexp --only-matching --quiet --silent --no-messages --no-filename"
            " --with-filename --extended-regexp --fixed-strings --basic-regexp --perl-regexp --null-data --text"
            " --byte-offset --initial-tab --line-buffered --no-group-separator",
            None,
            "no",
        ),
    ),
    pattern_first=True,
)
_RG = Program(
    options=opts(
        ("-L --follow", FOLLOW, "no"),
        ("-f --file --ignore-file", READ, "yes"),
        ("--pre --hostname-bin", CODE, "yes"),
        (
            "-e --regexp -g --glob --iglob -t --type -T --type-not --type-add --type-clear -m --max-count -A -B -C"
            " --after-context --before-context --context -j --threads -M --max-columns --max-filesize -r --replace"
            " --sort --sortr --path-separator --pre-glob --max-depth -d --encoding -E --engine --colors --color"
            " --field-match-separator --field-context-separator --context-separator --dfa-size-limit"
            " --regex-size-limit",
            None,
            "yes",
        ),
    ),
    pattern_first=True,
)
_SORT = Program(
    options=opts(
        ("-o --output", WRITE, "yes"),
        ("--compress-program", CODE, "yes"),
        ("--files0-from --random-source", READ, "yes"),
        ("-T --temporary-directory", WRITE, "yes"),
        ("-k --key -t --field-separator -S --buffer-size --parallel --batch-size", None, "yes"),
    )
)
_SED = Program(
    options=opts(
        ("-i --in-place", WRITE, "attached"),
        ("-f --file", CODE_FILE, "yes"),
        ("-e --expression", SCRIPT, "yes"),
        ("-l --line-length", None, "yes"),
        (
            "-s --separate -n --quiet --silent -E -r --regexp-extended -z --null-data -u --unbuffered --posix --debug"
            " --sandbox --follow-symlinks -b --binary --help --version",
            None,
            "no",
        ),
    ),
    script=_sed_script,
)
_AWK = Program(
    options=opts(
        ("-f --file -E --exec -i --include", CODE_FILE, "yes"),
        ("-l --load", CODE, "yes"),
        ("-e --source", SCRIPT, "yes"),
        ("-v --assign -F --field-separator", None, "yes"),
        ("-d --dump-variables", WRITE, "attached", or_default("awkvars.out")),
        ("-o --pretty-print -p --profile", WRITE, "attached", or_default("awkprof.out")),
        ("-D --debug", CODE, "attached"),  # the debugger runs the commands in the file
        ("-L --lint", None, "attached"),
        (
            "-b --characters-as-bytes -c --traditional -C --copyright -g --gen-pot -h --help -M --bignum -N"
            " --use-lc-numeric -n --non-decimal-data -O --optimize -P --posix -r --re-interval -s --no-optimize -S"
            " --sandbox -t --lint-old -V --version --csv -k",
            None,
            "no",
        ),
    ),
    script=_awk_script,
    given=frozenset({"-f", "--file", "-E", "--exec", "-e", "--source"}),
    dash_w=True,
)
#: tar's options that take a value, as letters of its old style (``tar cfb a.tar 20``).
TAR_VALUE_LETTERS = "bCfFgHIKLNTVX"
TAR = Program(
    options=opts(
        (
            "--to-command --use-compress-program -I --checkpoint-action --info-script -F --new-volume-script"
            " --rsh-command"
            " --rmt-command",
            CODE,
            "yes",
        ),
        ("-T --files-from -X --exclude-from --owner-map --group-map", READ, "yes"),
        ("-N --newer --after-date --newer-mtime --mtime", READ, "yes", date_or_file),
        ("-C --directory", DIR, "yes"),
        ("-f --file", WRITE, "yes"),
        ("-g --listed-incremental --index-file --volno-file", WRITE, "yes"),
        ("--one-top-level", WRITE, "attached"),
        ("-h --dereference -P --absolute-names", FOLLOW, "no"),
        ("--remove-files", WRITE, "no"),
        (
            "--exclude -b --blocking-factor -H --format --owner --group --mode --transform --xform --strip-components"
            " -K --starting-file -V --label -L --tape-length --suffix --quoting-style --sort --level --record-size"
            " --xattrs-include --xattrs-exclude --pax-option --hole-detection --warning --atime-preserve --exclude-tag"
            " --exclude-tag-all --exclude-tag-under --exclude-ignore --exclude-ignore-recursive",
            None,
            "yes",
        ),
        ("--backup --checkpoint --occurrence", None, "attached"),
        (
            "--list --create --extract --get --append --update --concatenate --delete --diff --compare --test-label"
            " --verbose --gzip --gunzip --ungzip --bzip2 --xz --lzma --lzip --lzop --zstd --compress --uncompress"
            " --auto-compress --no-auto-compress --to-stdout --keep-old-files --keep-newer-files --overwrite"
            " --overwrite-dir --skip-old-files --no-recursion --recursion --verify --totals --show-transformed-names"
            " --wildcards --no-wildcards --anchored --no-anchored --ignore-case --no-ignore-case --numeric-owner"
            " --preserve-permissions --same-permissions --same-owner --no-same-owner --no-same-permissions --sparse"
            " --null --no-null --multi-volume --interactive --confirmation --ignore-zeros --ignore-failed-read"
            " --one-file-system --acls --no-acls --xattrs --no-xattrs --selinux --no-selinux --utc --full-time"
            " --unlink-first --recursive-unlink --check-device --no-check-device --check-links --exclude-vcs"
            " --exclude-vcs-ignores --exclude-caches --exclude-caches-all --exclude-caches-under --exclude-backups"
            " --force-local --block-number --help --version --usage --touch --delay-directory-restore"
            " --no-delay-directory-restore --show-defaults --show-omitted-dirs",
            None,
            "no",
        ),
    )
)
_COPY = Program(
    options=opts(
        ("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes"), ("-L --dereference", FOLLOW, "no")
    ),
    last_operand=WRITE,
)
LN = Program(options=opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), last_operand=WRITE)
_PYTHON = Program(
    options=opts(("-c -m", CODE, "yes"), ("-W -X -Q", None, "yes")),
)
_NODE = Program(
    options=opts(
        ("-e --eval -p --print -r --require --import --loader --experimental-loader", CODE, "yes"),
        ("--input-type --inspect-port", None, "yes"),
    )
)
_PIP = Program(
    command_first=True,
    options=opts(
        ("-e --editable", CODE, "yes"),
        ("-r --requirement -c --constraint", READ, "yes"),
        ("-t --target --prefix --root --src --log --report --cache-dir -d --dest", WRITE, "yes"),
        ("-i --index-url --extra-index-url -f --find-links --trusted-host --config-settings -C", CODE, "yes"),
    ),
)
_NPM = Program(
    command_first=True,
    options=opts(
        ("--prefix -C --userconfig --globalconfig --script-shell --node-options -c --call", CODE, "yes"),
    ),
)
_MAKE = Program(
    options=opts(
        ("-f --file --makefile", CODE_FILE, "yes"),
        ("--eval -E", CODE, "yes"),
        ("-C --directory -I --include-dir", DIR, "yes"),
        ("-o --old-file --assume-old -W --what-if --new-file --assume-new -j --jobs -l --load-average", None, "yes"),
    )
)
_PYTEST = Program(
    options=opts(
        ("-p -c --config-file -o --override-ini --pdbcls --confcutdir --rootdir --import-mode", CODE, "yes"),
        ("--basetemp --junitxml --junit-xml --resultlog --log-file --html --cov-report --debug", WRITE, "yes"),
        ("-k -m --maxfail --tb --durations --deselect --ignore --ignore-glob -W", None, "yes"),
    )
)
_DD = Program()  # if=/of= handled in accesses()
FIND = Program(
    long_single_dash=True,
    options=opts(
        ("-L -follow", FOLLOW, "no"),
        ("-fprint -fprint0 -fprintf -fls", WRITE, "yes"),
        ("-exec -execdir -ok -okdir", CODE, "yes"),
        ("-delete", WRITE, "no"),
        ("-files0-from", READ, "yes"),
    ),
)
_VIM = Program(
    options=opts(
        ("-c --cmd", CODE, "yes"),
        ("-S -u -U -s", CODE_FILE, "yes"),  # a script of Ex or Normal-mode commands
        ("-w -W -i --startuptime", WRITE, "yes"),
        ("-V", WRITE, "attached"),
        ("-e -E --remote --remote-send --remote-expr --remote-silent --remote-wait --remote-tab", CODE, "no"),
        ("-q -t -T --servername -r", None, "yes"),
    ),
    plus_code=True,
)
_LESS = Program(
    options=opts(
        ("-o --log-file -O --LOG-FILE", WRITE, "yes"),
        ("-k --lesskey-file --lesskey-src", CODE_FILE, "yes"),
        ("--lesskey-content", CODE, "yes"),
        ("-T --tag-file", READ, "yes"),
        (
            "-t --tag -b --buffers -h --max-back-scroll -j --jump-target -x --tabs -y --max-forw-scroll -z --window"
            " -p --pattern -P --prompt",
            None,
            "yes",
        ),
    ),
    plus_code=True,
)
_COMPRESS = Program(
    options=opts(("-S --suffix", None, "yes")),
    operands=WRITE,
    deletes=True,
    keeps=frozenset({"-c", "-k", "-l", "-t", "--stdout", "--to-stdout", "--keep", "--list", "--test"}),
)
_UNIQ = Program(
    options=opts(
        ("-f --skip-fields -s --skip-chars -w --check-chars", None, "yes"),
        ("-D --all-repeated --group", None, "attached"),
    ),
    last_operand=WRITE,
)
_TREE = Program(
    options=opts(
        ("-o", WRITE, "yes"),
        ("-l", FOLLOW, "no"),
        ("--fromfile --gitfile --infofile", READ, "attached"),
        ("-P -I -L -H -T --charset --filelimit --timefmt --sort", None, "yes"),
    )
)

TABLE: Mapping[str, Program] = {
    "git": GIT,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sort": _SORT,
    "tee": Program(options=opts(("-p --output-error", None, "attached")), operands=WRITE),
    "sed": _SED,
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "nawk": _AWK,
    "tar": TAR,
    "curl": CURL,
    "wget": WGET,
    "cp": _COPY,
    "install": _COPY,
    "ln": LN,
    "rsync": Program(
        options=opts(
            ("-e --rsh --rsync-path", CODE, "yes"),
            (
                "--files-from --exclude-from --include-from --password-file --read-batch --compare-dest --copy-dest"
                " --link-dest",
                READ,
                "yes",
            ),
            ("--log-file --write-batch --only-write-batch --backup-dir -T --temp-dir --partial-dir", WRITE, "yes"),
            ("-L --copy-links --copy-unsafe-links -k --copy-dirlinks", FOLLOW, "no"),
            (
                "--delete --delete-before --delete-during --delete-delay --delete-after --delete-excluded --del"
                " --remove-source-files",
                WRITE,
                "no",
            ),
            (
                "-f --filter --exclude --include --chmod --chown -B --block-size --max-size --min-size --timeout"
                " --bwlimit --suffix --port",
                None,
                "yes",
            ),
        ),
        last_operand=WRITE,
    ),
    "scp": Program(options=opts(("-S -o -F", CODE, "yes"), ("-i", READ, "yes")), last_operand=WRITE),
    "mv": Program(options=opts(("-t --target-directory", WRITE, "yes"), ("-S --suffix", None, "yes")), operands=WRITE),
    "rm": Program(operands=WRITE),
    "rmdir": Program(operands=WRITE),
    "unlink": Program(operands=WRITE),
    "shred": Program(operands=WRITE),
    "truncate": Program(options=opts(("-s --size -r --reference", None, "yes")), operands=WRITE),
    "touch": Program(options=opts(("-d --date -r --reference -t", None, "yes")), operands=WRITE),
    "mkdir": Program(options=opts(("-m --mode", None, "yes")), operands=WRITE),
    "chmod": Program(operands=WRITE),
    "chown": Program(operands=WRITE),
    "chgrp": Program(operands=WRITE),
    "dd": _DD,
    "python": _PYTHON,
    "python3": _PYTHON,
    "pypy3": _PYTHON,
    "node": _NODE,
    "deno": _NODE,
    "bun": _NODE,
    "pip": _PIP,
    "pip3": _PIP,
    "npm": _NPM,
    "npx": _NPM,
    "pnpm": _NPM,
    "yarn": _NPM,
    "make": _MAKE,
    "gmake": _MAKE,
    "pytest": _PYTEST,
    "py.test": _PYTEST,
    "find": FIND,
    "echo": Program(text_operands=True),
    "printf": Program(text_operands=True),
    "perl": Program(options=opts(("-e -E -M -m -I -x", CODE, "attached"), ("-i", WRITE, "attached"))),
    "ruby": Program(options=opts(("-e -r -I", CODE, "yes"))),
    "less": _LESS,
    # man runs its pager (-P), a browser for -H, and what its config file names; the
    # other value options only choose pages.
    "man": Program(
        options=opts(
            ("-P --pager", CODE, "yes"),
            ("-H --html", CODE, "attached"),
            ("-C --config-file", CODE_FILE, "yes"),
            (
                "-M --manpath -S -s --sections -e --extension -L --locale -m --systems -p --preprocessor -E --encoding"
                " -R --recode -T --troff-device -r --prompt",
                None,
                "yes",
            ),
        )
    ),
    **{name: _VIM for name in ("vim", "vi", "nvim", "view", "ex", "gvim", "vimdiff", "rvim", "gview", "evim")},
    "zip": Program(
        options=opts(("-T -TT --unzip-command", CODE, "attached"), ("-m --move", WRITE, "no")), pattern_first=False
    ),
    "unzip": Program(options=opts(("-d", WRITE, "yes"))),
    "patch": Program(
        options=opts(
            ("-o --output -r --reject-file", WRITE, "yes"), ("-i --input", READ, "yes"), ("-d --directory", DIR, "yes")
        )
    ),
    "split": Program(
        options=opts(
            ("--filter", CODE, "yes"),
            (
                "-a --suffix-length -b --bytes -C --line-bytes -l --lines -n --number -t --separator"
                " --additional-suffix",
                None,
                "yes",
            ),
        ),
        last_operand=WRITE,
    ),
    "csplit": Program(options=opts(("-f --prefix", WRITE, "yes"), ("-b --suffix-format -n --digits", None, "yes"))),
    "uniq": _UNIQ,
    "ls": Program(
        options=opts(
            ("-L --dereference", FOLLOW, "no"),
            (
                "-I --ignore -w --width -T --tabsize --block-size --format --hide --indicator-style --quoting-style"
                " --sort"
                " --time --time-style",
                None,
                "yes",
            ),
            ("--color --colour", None, "attached"),
        )
    ),
    "tree": _TREE,
    "du": Program(
        options=opts(
            ("-L --dereference", FOLLOW, "no"),
            ("--files0-from -X --exclude-from", READ, "yes"),
            ("-d --max-depth -B --block-size -t --threshold --exclude --time-style", None, "yes"),
        )
    ),
    "wc": Program(options=opts(("--files0-from", READ, "yes"))),
    # `date -s` and an operand without `+` (`date 010112002020`) set the clock: see programs.accesses.
    "date": Program(
        options=opts(
            ("-f --file -r --reference", READ, "yes"),
            ("-d --date", None, "yes"),
            ("-s --set", SYSTEM, "yes"),
            ("-I --iso-8601", None, "attached"),
            ("--rfc-3339", None, "yes"),
        )
    ),
    # A name operand, `-F FILE` or `-b` sets the host or domain name: see programs.accesses.
    **{
        name: Program(options=opts(("-F --file", SYSTEM, "yes", lambda value: (value,)), ("-b --boot", SYSTEM, "no")))
        for name in ("hostname", "domainname", "nisdomainname", "ypdomainname")
    },
    "jq": Program(
        options=opts(
            ("-f --from-file", READ, "yes"), ("-L", READ, "yes"), ("--arg --argjson --slurpfile --rawfile", None, "yes")
        ),
        pattern_first=True,
    ),
    **{
        name: _COMPRESS
        for name in (
            "gzip",
            "gunzip",
            "bzip2",
            "bunzip2",
            "xz",
            "unxz",
            "lzma",
            "unlzma",
            "lzip",
            "pigz",
            "compress",
            "uncompress",
            "zstd",
            "unzstd",
        )
    },
    "ssh": Program(options=opts(("-o -F -E -S -i", CODE, "yes"))),
    "docker": Program(subcommand_rule=lambda argv, at: CODE, command_first=True),
    **{
        name: Program(command_first=True)
        for name in ("cargo", "go", "kubectl", "helm", "gh", "poetry", "uv", "terraform", "systemctl")
    },
    "crontab": Program(subcommand_rule=lambda argv, at: CODE),
}
