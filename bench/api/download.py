"""Bounded HTTP downloads: every byte the harness fetches has a size cap, a wall-clock deadline and a stall
timeout, and lands only through a ``.part`` file opened without following links.

Why: a mirror (``$BENCH_DATA_MIRROR``, ``$HF_ENDPOINT``) or a host on the way may be hostile or broken. Before
these bounds an endless body wrote 5 GB in 20 s, a body dripped one byte at a time hung past the 60 s socket
timeout (each byte reset it), and a ``.part`` that was a symbolic link was written through to a file outside the
data folder. Here:

- the size cap is the pinned size when the project (or the hub's listing) knows it, else a stated ceiling; a
  ``Content-Length`` over it is refused before the body, and a body is cut off one chunk past it;
- the deadline bounds the whole transfer, headers included: a watchdog shuts the connection's sockets down when it
  passes, so even a read blocked on a drip returns;
- a stall is less than :data:`MIN_RATE` bytes a second over a :data:`STALL_S` window (or silence that long);
- ``NAME.part`` is opened with ``O_NOFOLLOW`` (and must be a regular file), so a link there is refused, never
  followed; resumed with an HTTP ``Range`` request when a previous try left one;
- redirects follow http(s) only (``file://``, ``ftp://`` are refused), at most :data:`MAX_REDIRECTS`; a
  credential header is never sent on to another host; the host a download came from is reported
  (:attr:`Fetched.redirected_to`) so the caller can name it in its row.

Tests pass small caps and ~1 s timeouts (:class:`Bounds`); the defaults are stated in docs/fetch.md.
"""

from __future__ import annotations

import errno
import http.client
import os
import re
import socket
import stat
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.api.errors import DataError

__all__ = ["Bounds", "DownloadError", "Fetched", "Progress", "download", "open_part"]

#: (label, bytes so far, total bytes or None): how a caller draws progress
Progress = Callable[[str, int, "int | None"], None]
#: a stall: less than MIN_RATE bytes/s over a STALL_S window, or no byte at all for STALL_S
STALL_S = 60.0
MIN_RATE = 1024.0
#: the deadline of one file: DEADLINE_BASE_S plus DEADLINE_S_PER_MIB for every MiB of its cap (a 1.3 GB weights
#: file: about 1 h 35 min, i.e. it must arrive at 230 KiB/s on average)
DEADLINE_BASE_S = 600.0
DEADLINE_S_PER_MIB = 4.0
MAX_REDIRECTS = 5
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Bounds:
    """The limits of one download: ``max_bytes`` (its pinned size, or a stated ceiling), the wall-clock
    ``deadline_s`` (None: :data:`DEADLINE_BASE_S` + :data:`DEADLINE_S_PER_MIB` per MiB of ``max_bytes``), the stall
    window ``stall_s`` and the slowest rate that is not a stall, ``min_rate`` bytes/s."""

    max_bytes: int
    deadline_s: float | None = None
    stall_s: float = STALL_S
    min_rate: float = MIN_RATE

    @property
    def deadline(self) -> float:
        if self.deadline_s is not None:
            return self.deadline_s
        return DEADLINE_BASE_S + DEADLINE_S_PER_MIB * self.max_bytes / (1 << 20)


class DownloadError(DataError):
    """A download that did not finish within its bounds, was refused or failed; the message names the URL (or the
    ``.part`` file), what happened and the fix. ``kept``: whether a partial file was kept for a resumed try."""

    def __init__(self, message: str, kept: bool = False) -> None:
        from bench.api.text import visible

        super().__init__(visible(message))  # a server's reason phrase or Location is data: one line, no escapes
        self.kept = kept


@dataclass(frozen=True)
class Fetched:
    """What a download did: the URL asked for, the one the bytes came from, their number (with the resumed
    part) and whether it resumed."""

    url: str
    final_url: str
    size: int
    resumed: bool = False

    @property
    def redirected_to(self) -> str | None:
        """The host the bytes came from when a redirect led to another host than the one asked, else None."""
        asked, got = urlsplit(self.url).netloc, urlsplit(self.final_url).netloc
        return got if got and got != asked else None


def _size(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


# --- the watchdog: at the deadline every socket of the download is shut down ------------------------------------
class _Watch:
    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.expired = False
        self.lock = threading.Lock()

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            for sock in self.sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:  # the plain socket's shutdown, also for an SSL socket: it unblocks a read in another thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _watched(base: type[http.client.HTTPConnection], watch: _Watch) -> type[http.client.HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    return Watched


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self.watch = watch

    def do_open(self, http_class: Any, req: Any, **kw: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch), req, **kw)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch) -> None:
        super().__init__()
        self.watch = watch

    def do_open(self, http_class: Any, req: Any, **kw: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch), req, **kw)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """http(s) only, at most :data:`MAX_REDIRECTS`, and no credential header carried to another host."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        scheme = urlsplit(newurl).scheme.lower()
        if scheme not in ("http", "https"):
            raise urllib.error.HTTPError(req.full_url, code, f"redirect to {scheme or 'a relative'}:// URL "
                                         f"{newurl[:200]!r} refused (http and https only)", headers, fp)
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            for name in ("Authorization", "Cookie", "Proxy-Authorization"):
                new.remove_header(name)
                new.remove_header(name.capitalize())
        return new


# --- the .part file ---------------------------------------------------------------------------------------------
def open_part(part: Path, append: bool) -> int:
    """A descriptor for writing ``part``: opened with ``O_NOFOLLOW`` (a symbolic link there is refused, never
    written through) and ``O_NONBLOCK`` (a FIFO there does not wait for a reader); it must be a regular file with
    one link (a hard link to a file elsewhere is refused before it is truncated or appended to)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else 0  # truncated below, once it is known to be this download's own file
    try:
        fd = os.open(part, flags, 0o666)
    except OSError as exc:
        if part.is_symlink() or exc.errno in (errno.ELOOP, errno.ENXIO):  # ELOOP: a link; ENXIO: a FIFO nobody reads
            raise DownloadError(f"{part}: a symbolic link or special file where the download's partial file goes; "
                                "nothing was written through it. Fix: remove it and re-run.") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        what = "a hard link to another file" if stat.S_ISREG(info.st_mode) else "not a regular file"
        raise DownloadError(f"{part}: {what} where the download's partial file goes; nothing was written to it. "
                            "Fix: remove it and re-run.")
    os.set_blocking(fd, True)
    if not append:
        os.ftruncate(fd, 0)
    return fd


def _resumable(part: Path, cap: int) -> int:
    """Bytes of an earlier try to resume from: the size of ``part`` when it is a regular file (not a link) within the
    cap; a link is refused when it is opened."""
    try:
        info = part.lstat()
    except FileNotFoundError:
        return 0
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        open_part(part, append=True)  # raises, naming it
    return info.st_size if 0 < info.st_size < cap else 0


# --- the download -------------------------------------------------------------------------------------------------
def download(url: str, part: Path, bounds: Bounds, *, resume: bool = True, headers: Mapping[str, str] | None = None,
             progress: Progress | None = None, label: str | None = None, fix: str = "re-run the fetch") -> Fetched:
    """``url`` into ``part`` within ``bounds`` (resumed from an earlier ``part`` when ``resume``); raises
    :class:`DownloadError` naming the URL, the bound it broke and ``fix``. Checking the content (its hash) and
    renaming it into place is the caller's."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise DownloadError(f"{url}: only http and https URLs are downloaded (not {scheme or 'a relative'}:). Fix: "
                            "give an http(s) mirror; files already on this machine go in the data folder "
                            "(--data-dir) or $BENCH_CHECKPOINTS directly.")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = _resumable(part, bounds.max_bytes) if resume else 0
    request = urllib.request.Request(url, headers=dict(headers or {}))
    if have:
        request.add_header("Range", f"bytes={have}-")
    watch = _Watch()
    opener = urllib.request.OpenerDirector()  # http(s) only: no file://, ftp:// or data: handler at all
    for handler in (urllib.request.ProxyHandler(), _HTTP(watch), _HTTPS(watch), _Redirects(),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    timer = threading.Timer(bounds.deadline, watch.expire)
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    try:
        return _transfer(opener, request, part, have, bounds, watch, progress, label or part.name, fix)
    except DownloadError:
        raise
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the .part is already whole
            return Fetched(url, exc.geturl() or url, have, resumed=True)
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}. Fix: check the URL (or the mirror) and "
                            f"{fix}.") from None
    except MemoryError:
        raise DownloadError(f"{url}: ran out of memory while downloading. Fix: free memory and {fix}.") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        if _not_http(exc) and not watch.expired:  # the host answered, with something that is no HTTP response
            raise DownloadError(f"{url}: the server's answer is not valid HTTP ({type(exc).__name__}: "
                                f"{str(exc)[:200]}); nothing was kept. Fix: check the URL (or the mirror); "
                                f"{fix}.") from None
        if watch.expired:
            raise _late(url, bounds, fix) from None
        if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
            raise DownloadError(f"{url}: stalled (no data for {bounds.stall_s:g} s). Fix: {fix}; it resumes where it "
                                "stopped.", kept=True) from None
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(f"{url}: {reason}. Fix: {fix} where the host can be reached; it resumes where it "
                            f"stopped ({time.monotonic() - started:.0f} s in).", kept=True) from None
    finally:
        timer.cancel()


def _not_http(exc: BaseException) -> bool:
    """An answer no HTTP client can read (a bad status line, a header line over 64 KiB, more than 100 headers): the
    host was reached, so "where the host can be reached; it resumes" would mislead. A connection closed before or
    during the answer (``RemoteDisconnected``, ``IncompleteRead``) is the network's, and resumable."""
    return isinstance(exc, http.client.HTTPException) and not isinstance(
        exc, http.client.IncompleteRead | http.client.RemoteDisconnected)


def _resumed_at(resp: Any) -> int | None:
    """Where a 206 answer's body starts (``Content-Range: bytes START-END/TOTAL``), or None when it does not say."""
    m = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(?:\d+|\*)\s*", resp.headers.get("Content-Range") or "")
    return int(m.group(1)) if m else None


def _late(url: str, bounds: Bounds, fix: str) -> DownloadError:
    return DownloadError(f"{url}: not done within the {bounds.deadline:g} s deadline. Fix: {fix} on a faster link; "
                         "it resumes where it stopped.", kept=True)


def _transfer(opener: Any, request: urllib.request.Request, part: Path, have: int, bounds: Bounds, watch: _Watch,
              progress: Progress | None, label: str, fix: str) -> Fetched:
    url = request.full_url
    with opener.open(request, timeout=bounds.stall_s) as resp:
        resumed = bool(have) and resp.status == 206
        start = have if resumed else 0
        length = resp.length
        total = start + length if length is not None else None
        if total is not None and total > bounds.max_bytes:
            raise DownloadError(f"{url}: announces {total:,} bytes, over the {bounds.max_bytes:,}-byte cap of this "
                                f"file; nothing was downloaded. Fix: check the URL (or the mirror); {fix}.")
        fd = open_part(part, append=resumed)  # a link or a special file is refused here, before anything else
        if resumed and _resumed_at(resp) != have:  # appended, another offset's bytes would make a file no one sent
            os.close(fd)
            part.unlink(missing_ok=True)
            raise DownloadError(f"{url}: asked to resume at byte {have:,}, the server answered with the bytes of "
                                f"{resp.headers.get('Content-Range') or 'no Content-Range'}; the partial file was "
                                f"removed, nothing appended. Fix: {fix} (it starts over).")
        done = start
        window_at, window_bytes = time.monotonic(), 0
        read = getattr(resp, "read1", resp.read)
        try:
            while True:
                chunk = read(_CHUNK)
                if watch.expired:
                    raise _late(url, bounds, fix)
                if not chunk:
                    break
                done += len(chunk)
                if done > bounds.max_bytes:
                    raise DownloadError(f"{url}: sent more than the {bounds.max_bytes:,}-byte cap of this file; "
                                        f"cut off and removed. Fix: check the URL (or the mirror); {fix}.")
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                if progress:
                    progress(label, done, total)
                now = time.monotonic()
                window_bytes += len(chunk)
                if now - window_at >= bounds.stall_s:
                    if window_bytes < bounds.min_rate * (now - window_at):
                        raise DownloadError(f"{url}: stalled ({_size(window_bytes)} in {now - window_at:.1f} s, under "
                                            f"{_size(bounds.min_rate)}/s). Fix: {fix}; it resumes where it stopped.",
                                            kept=True)
                    window_at, window_bytes = now, 0
        except DownloadError as exc:
            os.close(fd)
            fd = -1
            if not exc.kept:
                part.unlink(missing_ok=True)
            raise
        finally:
            if fd >= 0:
                os.close(fd)
        if length is not None and done - start < length:
            raise DownloadError(f"{url}: the connection closed after {done:,} of {total:,} bytes. Fix: {fix}; it "
                                "resumes where it stopped.", kept=True)
        return Fetched(url, resp.geturl() or url, done, resumed)
