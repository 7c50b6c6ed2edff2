"""A small Kubernetes client over the standard library, for the live drain scripts: bearer token from a JSON
kubeconfig (server.sh writes them so), one keep-alive HTTPS connection per thread, list and watch.

The scripts stay free of dependencies on purpose: the harness must run on a machine that has Python 3 and
nothing else installed."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.parse
from datetime import datetime, timezone


def parse_time(text: str) -> float:
    """Unix seconds of an RFC 3339 instant (`Z` or an offset, with or without a fraction)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def rfc3339(seconds: float, fraction: bool = False) -> str:
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    if fraction:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, status: int, method: str, path: str, body):
        self.status = status
        message = body.get("message") if isinstance(body, dict) else str(body)[:300]
        super().__init__(f"{method} {path}: {status} {message}")


class Kube:
    def __init__(self, kubeconfig: str, timeout: float = 60):
        with open(kubeconfig) as f:
            config = json.load(f)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        url = urllib.parse.urlparse(cluster["server"])
        self.host, self.port = url.hostname, url.port or 443
        self.ssl = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self.token = user["token"]
        self.timeout = timeout
        self.local = threading.local()

    def _connection(self, timeout=None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=timeout or self.timeout)

    def request(self, method: str, path: str, body=None, content_type="application/json", retries=8):
        """The decoded answer of one request on this thread's connection. Connection errors, 429 and 5xx
        are retried (the populator must not lose objects to a busy server); other errors raise ApiError."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Accept": "application/json", "Authorization": f"Bearer {self.token}"}
        if data is not None:
            headers["Content-Type"] = content_type
        delay = 0.2
        for attempt in range(retries + 1):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = self.local.connection = self._connection()
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                self.local.connection = None
                if attempt == retries:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            status = response.status
            try:
                decoded = json.loads(raw) if raw else {}
            except ValueError:
                decoded = raw.decode(errors="replace")
            if (status == 429 or status >= 500) and attempt < retries:
                time.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            if status >= 400:
                raise ApiError(status, method, path, decoded)
            return decoded
        raise AssertionError("unreachable")

    def get(self, path: str):
        return self.request("GET", path)

    def create(self, path: str, body, exists_ok=True):
        """POST; an object that already exists is left as it is (409), which makes populating re-runnable."""
        try:
            return self.request("POST", path, body)
        except ApiError as error:
            if error.status == 409 and exists_ok:
                return None
            raise

    def list_all(self, path: str, query: dict | None = None, limit=500):
        """(items, resourceVersion) of a paginated list."""
        items, cont = [], None
        while True:
            params = dict(query or {}, limit=str(limit))
            if cont:
                params["continue"] = cont
            page = self.get(f"{path}?{urllib.parse.urlencode(params)}")
            items.extend(page.get("items", []))
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                return items, page["metadata"]["resourceVersion"]

    def watch(self, path: str, query: dict | None = None, on_list=None, stop: threading.Event | None = None):
        """Yields (type, object) for every change after a full list, which goes to `on_list(items)` first
        (again after a watch expired with 410). Runs until `stop` is set."""
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                items, version = self.list_all(path, query)
            except (OSError, http.client.HTTPException, ApiError):
                # a server that restarts is away for longer than request() retries
                time.sleep(1)
                continue
            if on_list:
                on_list(items)
            while not stop.is_set():
                params = dict(query or {}, watch="1", resourceVersion=version, allowWatchBookmarks="true",
                              timeoutSeconds="300")
                connection = self._connection(timeout=330)
                try:
                    connection.request("GET", f"{path}?{urllib.parse.urlencode(params)}",
                                       headers={"Accept": "application/json", "Authorization": f"Bearer {self.token}"})
                    response = connection.getresponse()
                    if response.status != 200:
                        response.read()
                        if response.status == 410:
                            break
                        time.sleep(1)
                        continue
                    expired = False
                    for line in response:
                        if stop.is_set():
                            break
                        event = json.loads(line)
                        kind, obj = event["type"], event["object"]
                        if kind == "ERROR":
                            expired = obj.get("code") == 410
                            break
                        version = obj["metadata"]["resourceVersion"]
                        if kind != "BOOKMARK":
                            yield kind, obj
                    if expired:
                        break
                except (OSError, http.client.HTTPException, ValueError):
                    time.sleep(1)
                finally:
                    connection.close()
