"""curl's and wget's entries in the per-program table (:mod:`runtime.policy.program_table`)."""

from __future__ import annotations

from runtime.policy.program_kinds import CODE, CODE_FILE, READ, WRITE, Program, opts
from runtime.policy.table_values import (
    at_file,
    cookie_file,
    date_or_file,
    encoded_file,
    form_file,
    upload_files,
    variable_file,
)

CURL = Program(
    options=opts(
        (
            "-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --stderr --etag-save --libcurl"
            " --output-dir --hsts --alt-svc --ssl-sessions",
            WRITE,
            "yes",
        ),
        ("-O --remote-name --remote-name-all -J --remote-header-name", WRITE, "no"),
        ("-K --config", CODE_FILE, "yes"),
        ("--engine", CODE, "yes"),
        ("-T --upload-file", READ, "yes", upload_files),
        (
            "--netrc-file --cacert --capath --cert --key --etag-compare --crlfile --pinnedpubkey"
            " --proxy-cacert --proxy-capath --proxy-cert --proxy-key --proxy-crlfile --proxy-pinnedpubkey"
            " --unix-socket --abstract-unix-socket --ech",
            READ,
            "yes",
        ),
        ("-b --cookie", READ, "yes", cookie_file),
        (
            "-d --data --data-ascii --data-binary --json -H --header --proxy-header -w --write-out",
            READ,
            "yes",
            at_file,
        ),
        ("--data-urlencode --url-query", READ, "yes", encoded_file),
        ("-F --form", READ, "yes", form_file),
        ("--variable", READ, "yes", variable_file),
        ("-z --time-cond", READ, "yes", date_or_file),
        (
            "-X --request -u --user -A --user-agent -e --referer -x --proxy -m --max-time --data-raw --form-string"
            " --connect-timeout -r --range --url --resolve --connect-to -U --proxy-user --retry --limit-rate -E"
            " --cert-type --key-type --oauth2-bearer --proto --proto-redir --max-redirs --interface",
            None,
            "yes",
        ),
    )
)
WGET = Program(
    options=opts(
        (
            "-O --output-document -o --output-file -a --append-output -P --directory-prefix --save-cookies"
            " --warc-file --rejected-log --hsts-file",
            WRITE,
            "yes",
        ),
        ("-e --execute --config --use-askpass", CODE, "yes"),
        (
            "-i --input-file --post-file --body-file --load-cookies --ca-certificate --certificate --private-key"
            " --ca-directory --crl-file",
            READ,
            "yes",
        ),
        ("-U --user-agent --header --post-data --method -t --tries -T --timeout -l --level", None, "yes"),
    )
)
