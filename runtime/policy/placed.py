"""A split command line placed in its workspace: what an allow rule may cover.

:func:`~runtime.policy.shell.split_command_line` says which commands a line runs and
how each word was written. :func:`place` adds what only the place it runs can tell,
and what only the programs' own options can tell, and marks every argv item an allow
rule must not cover with a wildcard:

- **run-time words** (``$f``, ``${IFS}``, ``$(...)``, ``~``, a brace list, what
  ``xargs`` appends, ``find -exec``'s ``{}``) can be covered by no allow rule: the line
  asks, naming the word;
- **glob words** (``*env``, ``src/*.py``) are expanded against the workspace now, as
  bash would (hidden names included when the line could turn ``dotglob`` on), and the
  command with its matches in place is what allow rules must cover; deny and ask rules
  see both forms. A glob that cannot be expanded (no workspace, too many matches) is a
  run-time word;
- **write and code options** (:mod:`runtime.policy.programs`: ``--output=``, ``sort -o``,
  ``git -c``, ``sed -i``, ``find -delete`` ...) are covered only by a pattern word that
  spells the option out; the files they read or write are listed as ``<``/``>``
  commands for deny and ask rules, like redirections;
- **paths outside the workspace** (absolute, ``..``, ``~``, through a symbolic link, or
  under ``/proc``, ``/sys``, ``/dev`` but ``/dev/null``) are covered only by a pattern
  word without wildcards;
- **toolrt's own files** (config, packs, audit log, artifacts, state, locks) make the
  line a denial whatever the rules say.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
from collections.abc import Iterator
from types import MappingProxyType

from runtime.policy import filelists, folders, gitrepo, linking, placecache, programs, recursive, treesecrets
from runtime.policy.bashglob import BRACE_LIMIT, GlobExpander, brace_variants
from runtime.policy.folders import Folders
from runtime.policy.placecache import (
    Check,
    compile_checks,
    still_kind,
    still_valid,
)
from runtime.policy.placedline import LITERAL, UNKNOWN, PlacedCommand, PlacedLine
from runtime.policy.placepaths import (
    PROCESS_STATE,
    names_folder,
    path_text,
    place_now,
    relative_ln,
    relinked,
    rests_after,
    settled,
    short,
    symlink_targets,
)
from runtime.policy.shell import GLOB, RUNTIME, XARGS_INPUT, CommandLine
from runtime.policy.where import NOWHERE, Where
from runtime.policy.where import within as _within

_MAX_ALIASES = 32  # names made earlier on a line followed at most (more: any path may be a link)

_WORST_FIRST = ("protected", "holds", "linked", "outside", "inside")
# Lines that may change how bash expands globs (dotglob, nocaseglob, globstar, GLOBIGNORE).
_GLOB_STATE = re.compile(r"shopt|GLOBIGNORE|BASHOPTS|SHELLOPTS|set\s+[-+]o")


def place(line: CommandLine, where: Where = NOWHERE, cwd: str = ".", text: str = "") -> PlacedLine:
    """Judge ``line`` (split from ``text``) as it would run in ``cwd`` (relative to the
    workspace root) of ``where``. Never raises: a defect makes the line uncertain.

    Agents send the same lines again and again, so a line without globs is remembered
    with the paths it resolved; it is reused only while every one of those paths still
    resolves to the same place (a link made since is seen)."""
    recent = where.recent
    key = (text, cwd)
    cached = recent.get(key) if text else None
    if cached is not None:
        if still_valid(cached[1]):
            return cached[0]
    try:
        placer = _Placer(where, cwd, text)
        placed = placer.run(line)
    except Exception as err:  # noqa: BLE001 - a defect here must fail closed, never let a line through unjudged
        return PlacedLine(
            tuple(PlacedCommand(argv, {0: UNKNOWN}) for argv in line.commands),
            f"the command line could not be checked (internal error: {type(err).__name__})",
        )
    validator = compile_checks(placer.resolved) if text and not placer.globbed else None
    if validator is not None:
        if len(recent) >= _RECENT_LINES:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):  # another thread evicted first
                recent.pop(next(iter(recent)))
        recent[key] = (placed, validator)
    return placed


_RECENT_LINES = 4096


@functools.lru_cache(maxsize=4096)
def place_static(line: CommandLine, cwd: str = ".", text: str = "") -> PlacedLine:
    """:func:`place` with no workspace (globs are run-time words, paths judged by their
    text alone), remembered: what grants and ``toolrt lint``-time tools use."""
    return place(line, NOWHERE, cwd, text)


class _Placer:
    def __init__(self, where: Where, cwd: str, text: str) -> None:
        self.where = where
        self.cwd = posixpath.normpath(cwd or ".")
        self.cwds = [self.cwd]  # where the command being placed may be (Folders.at)
        self.folders = Folders(self.cwd, ())
        # A line that may set dotglob & co. has its globs expanded as the worst case.
        self.globs = GlobExpander(where.root, self.cwd, loose=bool(_GLOB_STATE.search(text)))
        self.cdpath = "CDPATH" in text  # cd may then go to a folder named relative to it
        self.protected: str | None = None
        self.outside: list[str] = []
        self.holding: list[str] = []  # written folders that hold toolrt's own files
        self.linked: list[str] = []  # paths that may go through a link made earlier on the line
        self.globbed = False  # a glob was expanded: the result depends on the files present
        self.wrote = False  # an earlier command of the line may have made files
        self.resolved: list[Check] = []  # the paths the placement rests on
        # Names earlier commands of the line make (linking.name_effects), workspace-relative
        # or absolute: (made, what it stands for); and folders where links may appear.
        self.aliases: list[tuple[str, str]] = []
        self.link_texts: dict[str, str] = {}  # symbolic links made earlier on the line: name -> target text
        self.copies: set[tuple[str, str]] = set()  # the aliases made by copying or moving (cp, mv, rsync)
        self.unknown_below: list[str] = []
        self.braces: dict[str, tuple[str, ...] | None] = {}  # CommandLine.braces
        # Folders a command lists the files below (find, ls -R), and whether a command of
        # the line reads files it is fed (xargs, a run-time word): together, a recursive read.
        self.listed: list[tuple[tuple[str, ...], int, str]] = []
        self.fed = False

    def run(self, line: CommandLine) -> PlacedLine:
        placed: list[PlacedCommand] = []
        self.braces = dict(line.braces)
        shapes = line.shapes or tuple("l" * len(argv) for argv in line.commands)
        self.folders = Folders(self.cwd, line.gates)
        for index, (argv, shape) in enumerate(zip(line.commands, shapes, strict=True)):
            self.cwds = self.folders.at(index)
            if self.cwds is not self.folders.everywhere and names_folder(argv):
                # The program table reads what `tar -C DIR`, `make -C DIR` ... write from the
                # folder the command starts in, not from DIR: every folder stays in play.
                self.cwds = list(dict.fromkeys([*self.cwds, *self.folders.everywhere]))
            placed.extend(self._command(argv, shape))
            self._moved(index, argv, shape)
            self._made_names(argv)
            # Globs are expanded now, before the line runs: files a command makes first
            # (a link, a copy) would be matched by what runs after it.
            self.wrote = self.wrote or programs.may_create_files(argv)
        if self.fed:
            for argv, index, folder in self.listed:
                self._tree_read(argv, index, folder, {})
        return PlacedLine(
            tuple(placed),
            line.problem,
            self.protected,
            tuple(dict.fromkeys(self.outside)),
            tuple(dict.fromkeys(self.holding)),
            tuple(dict.fromkeys(self.linked)),
        )

    # -- one command ----------------------------------------------------------------

    def _command(self, argv: tuple[str, ...], shape: str) -> Iterator[PlacedCommand]:
        guards: dict[int, int] = {}
        notes: list[str] = []
        expanded: list[list[str]] = [[item] for item in argv]
        has_glob = False
        for index, kind in enumerate(shape):
            variants = self.braces.get(argv[index]) if kind == RUNTIME else None
            if variants is not None and all(settled(variant) for variant in variants):
                # A brace word of plain words (`{src,docs}`, `f{1..3}.txt`): bash makes
                # them before the line runs, so allow rules must cover each of them.
                expanded[index] = list(variants)
                has_glob = True
            elif kind == RUNTIME:
                guards[index] = UNKNOWN
                what = "the input xargs appends" if argv[index] == XARGS_INPUT else f"`{short(argv[index])}`"
                notes.append(f"{what} is only known when the line runs" + (" (a file it runs)" if not index else ""))
            elif kind == GLOB:
                # Globs are read from the start folder: after a cd they are only known at run time.
                matches = self.globs.expand(argv[index]) if not self.wrote and self.cwds == [self.cwd] else None
                self.globbed = True
                if matches is None:
                    guards[index] = UNKNOWN
                    why = (
                        "comes after a command that may create files"
                        if self.wrote
                        else "could not be expanded against the workspace"
                    )
                    notes.append(f"the glob `{short(argv[index])}` {why}")
                else:
                    expanded[index] = matches
                    has_glob = True
        if not has_glob:
            yield from self._judged(argv, shape, guards, notes, own=True)
            return
        # Deny and ask rules see the command as written; allow rules must cover its expansion.
        yield PlacedCommand(argv, MappingProxyType(dict(guards)), own=False, notes=tuple(notes))
        flat: list[str] = []
        flat_shape: list[str] = []
        flat_guards: dict[int, int] = {}
        for index, items in enumerate(expanded):
            for item in items:
                if index in guards:
                    flat_guards[len(flat)] = guards[index]
                flat.append(item)
                flat_shape.append(shape[index] if shape[index] != GLOB else "l")
        yield from self._judged(tuple(flat), "".join(flat_shape), flat_guards, notes, own=True)

    def _judged(
        self, argv: tuple[str, ...], shape: str, guards: dict[int, int], notes: list[str], *, own: bool
    ) -> Iterator[PlacedCommand]:
        extra: list[PlacedCommand] = []
        redirection = argv[:1] in (("<",), (">",))
        # A symbolic link's relative target, read from the folder the link is made in
        # (each folder it may be made in); not from where the command runs.
        link_targets = {} if redirection else symlink_targets(argv)
        if not redirection:
            accesses = programs.accesses(argv)
            for index in filelists.file_list_items(argv, accesses):
                guards[index] = UNKNOWN
                notes.append(
                    f"`{short(argv[index])}` opens the files named inside a file: only known when the line runs"
                )
            for access in accesses:
                current = guards.get(access.index, 0)
                if access.kind in programs.GUARDED and access.named > 0 and current >= 0:
                    guards[access.index] = max(current, access.named)
                    notes.append(f"`{short(argv[access.index])}` {programs.DOES[access.kind]}")
                if access.path is not None and access.kind in (programs.READ, programs.WRITE):
                    extra.append(PlacedCommand(("<" if access.kind == programs.READ else ">", access.path), own=False))
                if access.path is not None:
                    # A link's target is reachable through the link from then on: judged like a write.
                    write = access.kind in (programs.WRITE, programs.LINK)
                    destroys = write and programs.destroys(argv, access)
                    if access.kind == programs.LINK and access.index in link_targets:
                        for target in link_targets[access.index]:
                            self._check_path(target, argv, access.index, guards, notes, write=True, destroys=True)
                        continue
                    self._check_path(access.path, argv, access.index, guards, notes, write=write, destroys=destroys)
                    if access.kind == programs.LINK and not access.path.startswith(("/", "~")):
                        # A relative target is read from the link's own folder.
                        folder = posixpath.dirname(argv[-1]) if len(argv) > 2 else ""
                        self._check_path(
                            posixpath.join(folder, access.path),
                            argv,
                            access.index,
                            guards,
                            notes,
                            write=True,
                            destroys=True,
                        )
                if access.kind == programs.FOLLOW:
                    # Following links while walking a tree can read anything a link points to.
                    self.outside.append(argv[access.index])
        for index in self._path_items(argv, shape):
            if index in link_targets:
                for target in link_targets[index]:
                    self._check_path(target, argv, index, guards, notes, write=True, destroys=True)
                continue
            self._check_path(path_text(argv[index]), argv, index, guards, notes, write=argv[0] == ">")
        if argv[0] == "git" or argv[0].endswith("/git"):
            self._check_repository(argv, guards, notes)
        if not redirection:
            for index, folder in recursive.tree_reads(argv):
                extra.extend(PlacedCommand(("<", f), own=False) for f in self._tree_read(argv, index, folder, guards))
            self.listed.extend((argv, index, folder) for index, folder in recursive.lists_tree(argv))
            self.fed = self.fed or XARGS_INPUT in argv or RUNTIME in shape
        for folder in linking.tree_writers(argv):
            # patch, git apply, git reset --hard: the files written are named by input the line does not show.
            self._check_path(folder, argv, 0, guards, notes, write=True)
        yield PlacedCommand(argv, MappingProxyType(guards), own=own, notes=tuple(dict.fromkeys(notes)))
        yield from extra

    def _check_repository(self, argv: tuple[str, ...], guards: dict[int, int], notes: list[str]) -> None:
        """A git command in a repository the agent could have made (its config can run
        commands) is covered by no allow rule."""
        root = self.where.root_text
        sub, folder = linking.git_subcommand(argv)
        if root is None or sub in gitrepo.NO_REPOSITORY:
            return
        for cwd in self.cwds:
            start = self._joined(cwd, folder)
            if start == "~":
                continue
            real = os.path.realpath(start if start.startswith("/") else f"{root}/{start}")
            if real == root and still_kind(f"{root}/.git", "dir"):
                self.resolved.append((f"{root}/.git", placecache.DIR, None))  # re-checked when the line is reused
                continue
            if real == root and still_kind(f"{root}/.git", "absent") and still_kind(f"{root}/HEAD", "absent"):
                # No repository here: git looks above the workspace, which is not the agent's to
                # make. Making .git or HEAD in the root changes the root's entries: one lstat re-checks.
                self.resolved.extend((f"{root}/{name}", placecache.ABSENT, None) for name in (".git", "HEAD"))
                continue
            self.globbed = True  # what git finds depends on files beside the paths: judged afresh each time
            problem = gitrepo.repository_problem(root, real)
            if problem is not None:
                guards[0] = UNKNOWN
                notes.append(problem)

    def _tree_read(self, argv: tuple[str, ...], index: int, text: str, guards: dict[int, int]) -> list[str]:
        """``argv`` reads every file below the folder ``text`` (``grep -r``, ``rg``, ``cp -r``): a denial
        when toolrt's files are among them; the secret files below it (returned) are shown as reads."""
        root, shown = self.where.root_text, (short(argv[index]) if index else "the working folder")
        checks = treesecrets.index_checks(argv, root)  # git diff: its index says what it reads
        self.globbed = self.globbed or checks is None  # else what the folder holds is read at run time
        self.resolved.extend(checks or ())
        secrets: list[str] = []
        for cwd in self.cwds:
            if text.startswith("~") or cwd.startswith("~"):
                continue  # outside the workspace: asked as such
            if not text.startswith("/") and root is None:
                continue  # where a relative folder is, is unknown without the workspace
            base = cwd if cwd.startswith("/") else f"{root}/{cwd}"
            real = os.path.realpath(text if text.startswith("/") else posixpath.join(base, text))
            problem = recursive.tree_problem(self.where, real, argv)
            if problem is not None:
                self.protected = self.protected or (
                    f"`{short(' '.join(argv))}` reads every file below {shown}, which {problem}; "
                    "name the folders beside them instead"
                )
                return secrets
            found = treesecrets.shown_secrets(text, real, argv, root)
            if found is None:
                guards[index] = UNKNOWN  # too many entries to look through for secret files
            secrets.extend(found or ())
        return secrets

    def _path_items(self, argv: tuple[str, ...], shape: str) -> Iterator[int]:
        """The items that may name a file: operands, ``--opt=value`` values, redirection targets."""
        if not argv:
            return
        if argv[0] in ("<", ">"):
            yield 1
            return
        if programs.text_operands(argv[0]):
            return
        skip = programs.pattern_operands(argv) | recursive.name_globs(argv)
        for index in range(1, len(argv)):
            if index in skip:
                continue
            item = argv[index]
            if item.startswith("-"):
                if "=" in item or (not item.startswith("--") and len(item) > 2 and item[2] in "/~."):
                    yield index  # --opt=value, -oVALUE: judged by the value
                continue
            yield index

    def _check_path(
        self,
        text: str,
        argv: tuple[str, ...],
        index: int,
        guards: dict[int, int],
        notes: list[str],
        *,
        write: bool,
        destroys: bool = False,
    ) -> None:
        """Mark item ``index`` when ``text`` names a path outside the workspace or toolrt's
        own, or (for a write) a folder that holds toolrt's own: deleting such a folder
        (``rm -rf .``, ``git clean``) is a denial, writing into it (``tar xf``) asks."""
        if not text:
            return
        variants = brace_variants(text)
        for spelled in (argv[index], text):
            # The same word read with its quoting (what bash makes of it), as well.
            if spelled in self.braces and variants is not None:
                quoted = self.braces[spelled]
                variants = (
                    None if quoted is None else [*variants, *(path_text(v) if spelled != text else v for v in quoted)]
                )
        if variants is None:
            self.protected = (
                self.protected
                or f"`{short(argv[index])}` has too many brace variants to check (more than {BRACE_LIMIT}); "
                "toolrt's own files could be among them"
            )
            return
        for variant in dict.fromkeys(variants):
            if PROCESS_STATE.match(variant):
                # /proc/$PPID/environ: whatever the id, it is a process's own state.
                self._mark("protected", text, argv, index, guards, notes)
                continue
            # The part known before the line runs: up to the first expansion.
            known = re.split(r"[$`]", variant, maxsplit=1)[0]
            if known:
                place = self._place(known, write=write and known == variant)
                if place == "holds" and destroys:
                    self.protected = (
                        self.protected
                        or f"`{short(argv[index])}` holds toolrt's own files, "
                        f"and `{argv[0]}` would delete, change or link it"
                    )
                else:
                    self._mark(place, text, argv, index, guards, notes)

    def _mark(
        self, place: str, text: str, argv: tuple[str, ...], index: int, guards: dict[int, int], notes: list[str]
    ) -> None:
        """Record what ``_place`` found for item ``index``."""
        if place == "protected":
            self.protected = (
                self.protected
                or f"`{short(argv[index])}` names toolrt's own files (config, audit log, artifacts or state)"
            )
        elif place == "holds":
            self.holding.append(text)
            guards[index] = UNKNOWN
            notes.append(f"`{short(argv[index])}` writes a folder that holds toolrt's own files")
        elif place == "linked":
            # Where it leads is only known once the line runs: toolrt's files, perhaps.
            self.linked.append(text)
            guards[index] = UNKNOWN
            notes.append(
                f"`{short(argv[index])}` may go through a link an earlier command of the line unpacks or checks out"
            )
        elif place == "outside":
            self.outside.append(text)
            if self.where.outside == "allow":
                return
            if guards.get(index, 0) >= 0:
                guards[index] = LITERAL
            notes.append(f"`{short(argv[index])}` names a path outside the workspace")

    def _place(self, text: str, *, write: bool) -> str:
        """ "inside", "outside", "holds" or "protected" for a path's text, from every
        directory the line may be in by then (``cd`` moves it): the worst of them counts."""
        if len(self.cwds) == 1 or text.startswith(("/", "~")):
            return self._place_from(self.cwds[0], text, write=write)
        places = {self._place_from(cwd, text, write=write) for cwd in self.cwds}
        return next(place for place in _WORST_FIRST if place in places)

    def _moved(self, index: int, argv: tuple[str, ...], shape: str) -> None:
        """After ``cd DIR`` (or ``pushd``), later paths may be relative to DIR too; the
        commands that wait for a ``cd`` to a plain folder of the workspace run there only."""
        if not argv or argv[0] not in ("cd", "pushd"):
            return
        operands = [(k, item) for k, item in enumerate(argv[1:], 1) if not item.startswith("-") or item == "-"]
        if not operands or shape[operands[0][0]] != "l" or operands[0][1] in ("-", "~") or self.cdpath:
            target = "~"  # home, the previous directory or a run-time value: somewhere unknown
        else:
            target = operands[0][1]

        def moves(cwd: str) -> list[str]:
            found = [target if target.startswith(("/", "~")) else posixpath.normpath(posixpath.join(cwd, target))]
            if ".." in target and target != "~":
                # bash's cd reads `..` from the text (-L) or after links (-P, `set -P`): both.
                found.append(self._physical(cwd, target))
            return found

        self.folders.moved(index, moves, self._certain_cd(argv, shape))

    def _certain_cd(self, argv: tuple[str, ...], shape: str) -> list[str] | None:
        """Where a command waiting for this ``cd`` runs, when that is certain: a plain
        folder of the workspace reached without links, from every folder the line may be
        in, with nothing made earlier on the line that could change the way there."""
        target = folders.certain_target(argv, shape)
        root = self.where.root_text
        if target is None or root is None or self.cdpath or self.wrote or self.aliases or self.unknown_below:
            return None
        found: list[str] = []
        for cwd in self.cwds:
            checked = folders.real_folders(root, cwd, target)
            if checked is None:
                return None
            self.resolved.extend((path, placecache.DIR, None) for path in checked)
            found.append(posixpath.normpath(posixpath.join(cwd, target)))
        return list(dict.fromkeys(found))

    def _made_names(self, argv: tuple[str, ...]) -> None:
        """Remember the names ``argv`` makes (links, copies of links, moves) so later paths
        of the line are judged as what they will be; a hard link to toolrt's own files, or
        a symbolic link to them, is a denial now."""
        for effect in linking.name_effects(argv):
            if len(self.aliases) >= _MAX_ALIASES or len(self.unknown_below) >= _MAX_ALIASES:
                self.unknown_below = ["."]  # too many to follow: any later path may be a link
                return
            if effect.kind == linking.UNKNOWN_LINKS:
                self.unknown_below.extend(self._joined(cwd, effect.made) for cwd in self.cwds)
                continue
            source = effect.source or ""
            for cwd in self.cwds:
                made = self._joined(cwd, effect.made)
                candidates = {made: False, posixpath.join(made, posixpath.basename(source.rstrip("/")) or "."): True}
                for name, into in candidates.items():
                    if effect.into is not None and into != effect.into:
                        continue
                    readings = [self._joined(cwd, source)]
                    if argv[0] == "ln" and effect.kind == linking.ALIAS and not source.startswith("/"):
                        # A symbolic link's relative target is read from the link's own folder;
                        # with -r (alone or in a bundle: -sr) ln computes it from the cwd reading.
                        readings = [
                            self._joined(posixpath.dirname(name), source),
                            *(readings if relative_ln(argv) else ()),
                        ]
                        self.link_texts[name] = source
                    elif effect.kind == linking.ALIAS:
                        # A copied or moved link keeps its text: a relative one is read from its new folder.
                        text = self._link_text(cwd, source)
                        if text is not None and not text.startswith("/"):
                            readings.append(self._joined(posixpath.dirname(name), text))
                            self.link_texts[name] = text
                    for stands_for in readings:
                        if effect.kind == linking.HARD or (effect.kind == linking.ALIAS and argv[0] in ("ln", "cp")):
                            if self._place_from(".", stands_for, write=True) in ("protected", "holds"):
                                what = "hard links" if effect.kind == linking.HARD else "links"
                                self.protected = (
                                    self.protected
                                    or f"`{argv[0]}` {what} `{short(source)}`, which is or holds toolrt's own files"
                                )
                        self.aliases.append((name, stands_for))
                        if argv[0] != "ln":
                            self.copies.add((name, stands_for))

    def _link_text(self, cwd: str, source: str) -> str | None:
        """The target text of ``source`` when it names a symbolic link (made earlier on
        the line, or on disk now), else None."""
        if not source or source.endswith("/"):
            return None  # `cp -P link/` copies what the link leads to
        joined = self._joined(cwd, source)
        if joined in self.link_texts:
            return self.link_texts[joined]
        root = self.where.root_text
        if root is None or joined.startswith("~"):
            return None
        try:
            return os.readlink(joined if joined.startswith("/") else f"{root}/{joined}")
        except OSError:
            return None

    def _joined(self, cwd: str, text: str) -> str:
        """``text`` read from ``cwd``, normalised: workspace-relative, absolute, or ``~``."""
        if text.startswith(("/", "~")):
            return "/" + text.lstrip("/") if text.startswith("/") else "~"
        if cwd.startswith("~"):
            return "~"
        return posixpath.normpath(posixpath.join(cwd, text))

    def _physical(self, cwd: str, target: str) -> str:
        """The folder ``cd -P target`` leads to from ``cwd``: relative to the workspace
        root when inside it, else absolute (``~`` when the workspace is unknown)."""
        root = self.where.root_text
        if cwd.startswith("~") or root is None:
            return "~"
        start = cwd if cwd.startswith("/") else f"{root}/{cwd}"
        real = os.path.realpath(posixpath.join(start, target))
        self.resolved.append((posixpath.join(start, target), real, None))
        if _within(real, root):
            return posixpath.relpath(real, root)
        return real

    def _place_from(self, cwd: str, text: str, *, write: bool) -> str:
        """ "inside", "outside", "holds" or "protected" for a path's text read from ``cwd``
        (strings, not pathlib: this runs for every path-like word of every command line).
        toolrt's own files are looked for first, also through ``..`` and absolute paths."""
        if cwd.startswith("~") or text.startswith("~"):
            return "outside"
        if self.aliases or self.unknown_below:
            return self._place_made(cwd, text, write=write)
        return self._place_now(cwd, text, write=write)

    def _place_made(self, cwd: str, text: str, *, write: bool, depth: int = 0) -> str:
        """Like ``_place_now``, for a path that may go through a name an earlier command
        of the line made: the worst of what it is now and what it will be."""
        places = {self._place_now(cwd, text, write=write)}
        joined = self._joined(cwd, text)
        if any(_within(joined, folder) or folder == "." for folder in self.unknown_below):
            places.add("linked")  # a link whose target the line does not show may be on the way
        for made, stands_for in self.aliases:
            if depth >= _MAX_ALIASES:
                break
            if joined == made or joined.startswith(made + "/"):
                rest = joined[len(made) :]
                places.add(self._place_made(".", stands_for + rest, write=write, depth=depth + 1))
                if (made, stands_for) in self.copies:
                    for copy in relinked(self.where.root_text, made, stands_for, rest):
                        places.add(self._place_made(".", copy, write=write, depth=depth + 1))
            for rest in rests_after(cwd, text, made):
                # `made/../x`: the kernel applies `..` to where the new name leads, which
                # the normalised text above has already dropped.
                places.add(self._place_made(".", stands_for + rest, write=write, depth=depth + 1))
        return next(place for place in _WORST_FIRST if place in places)

    def _place_now(self, cwd: str, text: str, *, write: bool) -> str:
        """ "inside", "outside", "holds" or "protected" for a path as the files are now."""
        return place_now(self.where, self.resolved, cwd, text, write=write)

    # -- globs -------------------------------------------------------------------------
