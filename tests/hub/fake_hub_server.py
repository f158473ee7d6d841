#!/usr/bin/python3
"""A stand-in for the HuggingFace hub on 127.0.0.1, for the pull tests.

Serves local folders as hub repositories with the hub's endpoints and headers:
  GET  /api/models/{org}/{name}/revision/{rev}      -> {"id", "sha", "siblings": [{"rfilename"}]}
  HEAD/GET /{org}/{name}/resolve/{rev}/{file}       -> X-Repo-Commit, ETag (git blob sha1), Content-Length;
       *.safetensors are LFS files: 302 to /cdn/... with X-Linked-Etag (sha256) and X-Linked-Size
  GET  /cdn/{org}/{name}/{sha256}                   -> the bytes, with Range support
Errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound) as the hub does.

Scenario knobs: an endpoint of the form http://127.0.0.1:PORT/s/{scenario} selects them; the scenario is
'+'-separated words (any other word just makes the scenario unique):
  cut-once  the first CDN answer of this scenario stops halfway (connection closed)
  bad-blob  the CDN serves bytes whose sha256 is not the advertised one
  auth      requests need "Authorization: Bearer hf_test_token": none -> 401, another -> 403
  no-range  the CDN ignores Range and always sends the whole file
GET /_log?scenario=S returns the requests served for scenario S (method, path, range, status, sent bytes).

Usage: fake_hub_server.py --port-file FILE --repo org/name=FOLDER [--repo ...]
The server binds a free port, writes it to FILE, and exits when its parent process goes away.
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "hf_test_token"
CHUNK = 64 * 1024


class Repo:
    def __init__(self, repo_id, folder):
        self.repo_id = repo_id
        self.folder = folder
        self.commit = hashlib.sha1(("commit:" + repo_id).encode()).hexdigest()
        self.files = {}
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, folder).replace(os.sep, "/")
                data = open(path, "rb").read()
                git_sha1 = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                self.files[rel] = {
                    "path": path,
                    "size": len(data),
                    "git_sha1": git_sha1,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "lfs": rel.endswith(".safetensors"),
                }

    def by_sha256(self, sha):
        for info in self.files.values():
            if info["sha256"] == sha:
                return info
        return None


class State:
    repos = {}
    log = []
    once_done = set()
    lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    # -- plumbing -------------------------------------------------------------------------------
    def split_scenario(self):
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path
        scenario = "ok"
        if path.startswith("/s/"):
            rest = path[3:]
            scenario, _, tail = rest.partition("/")
            path = "/" + tail
        return scenario, path, urllib.parse.parse_qs(parsed.query)

    def record(self, status, sent):
        with State.lock:
            State.log.append({
                "scenario": self.scenario,
                "method": self.command,
                "path": self.route,
                "range": self.headers.get("Range", ""),
                "auth": self.headers.get("Authorization", ""),
                "status": status,
                "sent": sent,
            })

    def reply(self, status, headers=None, body=b""):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent = 0
        if self.command != "HEAD" and body:
            self.wfile.write(body)
            sent = len(body)
        self.record(status, sent)

    def error(self, status, code, message):
        headers = {"X-Error-Message": message, "Content-Type": "application/json"}
        if code:
            headers["X-Error-Code"] = code
        self.reply(status, headers, json.dumps({"error": message}).encode())

    def knobs(self):
        return set(self.scenario.split("+"))

    def authorized(self):
        if "auth" not in self.knobs():
            return True
        given = self.headers.get("Authorization")
        if given is None:
            self.error(401, None, "Access to this model is restricted. You must be authenticated.")
            return False
        if given != "Bearer " + TOKEN:
            self.error(403, None, "Your token does not have access to this model.")
            return False
        return True

    # -- endpoints --------------------------------------------------------------------------------
    def handle_any(self):
        self.scenario, self.route, query = self.split_scenario()
        parts = [urllib.parse.unquote(p) for p in self.route.split("/")[1:]]
        if parts[:1] == ["_log"]:
            want = query.get("scenario", ["ok"])[0]
            with State.lock:
                entries = [e for e in State.log if e["scenario"] == want]
            return self.reply(200, {"Content-Type": "application/json"}, json.dumps(entries).encode())
        if not self.authorized():
            return
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            return self.revision_api(parts[2] + "/" + parts[3], "/".join(parts[5:]))
        if parts[:1] == ["cdn"] and len(parts) == 4:
            return self.cdn(parts[1] + "/" + parts[2], parts[3])
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        self.error(404, None, "no such endpoint")

    def find_repo(self, repo_id):
        repo = State.repos.get(repo_id)
        if repo is None:
            self.error(404, "RepoNotFound", "Repository Not Found for url: " + self.route)
        return repo

    def find_commit(self, repo, revision):
        if revision in ("main", repo.commit):
            return repo.commit
        self.error(404, "RevisionNotFound", "Invalid rev id: " + revision)
        return None

    def revision_api(self, repo_id, revision):
        repo = self.find_repo(repo_id)
        if repo is None or self.find_commit(repo, revision) is None:
            return
        body = {"id": repo.repo_id, "sha": repo.commit,
                "siblings": [{"rfilename": name} for name in sorted(repo.files)]}
        self.reply(200, {"Content-Type": "application/json"}, json.dumps(body).encode())

    def resolve(self, repo_id, revision, filename):
        repo = self.find_repo(repo_id)
        if repo is None:
            return
        commit = self.find_commit(repo, revision)
        if commit is None:
            return
        info = repo.files.get(filename)
        if info is None:
            return self.error(404, "EntryNotFound", filename + " does not exist on \"" + revision + "\"")
        headers = {"X-Repo-Commit": commit, "ETag": '"%s"' % info["git_sha1"]}
        if info["lfs"]:
            host, port = self.server.server_address[:2]
            prefix = "" if self.scenario == "ok" else "/s/" + self.scenario
            headers["Location"] = "http://%s:%d%s/cdn/%s/%s" % (host, port, prefix, repo_id, info["sha256"])
            headers["X-Linked-Etag"] = '"%s"' % info["sha256"]
            headers["X-Linked-Size"] = str(info["size"])
            return self.reply(302, headers, b"Found. Redirecting")
        self.send_file(info, headers, corrupt=False, cut=False)

    def cdn(self, repo_id, sha):
        repo = self.find_repo(repo_id)
        if repo is None:
            return
        info = repo.by_sha256(sha)
        if info is None:
            return self.error(404, None, "no such object")
        knobs = self.knobs()
        cut = False
        if "cut-once" in knobs and self.command == "GET":
            with State.lock:
                if self.scenario not in State.once_done:
                    State.once_done.add(self.scenario)
                    cut = True
        self.send_file(info, {"ETag": '"%s"' % sha}, corrupt="bad-blob" in knobs, cut=cut,
                       honour_range="no-range" not in knobs)

    def send_file(self, info, headers, corrupt, cut, honour_range=True):
        size = info["size"]
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if rng and honour_range and self.command == "GET":
            spec = rng.replace("bytes=", "").split("-")
            start = int(spec[0])
            if start >= size:
                headers["Content-Range"] = "bytes */%d" % size
                return self.reply(416, headers)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, size - 1, size)
        length = size - start
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command == "HEAD":
            return self.record(status, 0)
        limit = length // 2 if cut else length
        sent = 0
        with open(info["path"], "rb") as f:
            f.seek(start)
            while sent < limit:
                data = bytearray(f.read(min(CHUNK, limit - sent)))
                if not data:
                    break
                if corrupt and start + sent <= size // 2 < start + sent + len(data):
                    data[size // 2 - start - sent] ^= 0xFF
                self.wfile.write(data)
                sent += len(data)
        self.record(status, sent)
        if cut:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    def do_GET(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that hang up (a pull that was stopped on purpose) are part of the tests.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def watch_parent(parent):
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--repo", action="append", default=[], help="org/name=FOLDER")
    args = ap.parse_args()
    for spec in args.repo:
        repo_id, _, folder = spec.partition("=")
        State.repos[repo_id] = Repo(repo_id, folder)
    server = Server(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
