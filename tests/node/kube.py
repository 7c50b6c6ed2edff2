"""A small client for the node's API server (the admin kubeconfig's client certificate), kubectl for
manifests, and the Helm v4 engine (helm-python-sdk) for the chart: what the tests in this folder drive
the real node with."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import ssl
import subprocess
import tempfile
import time
import urllib.parse

import yaml


class Kube:
    def __init__(self, kubeconfig: str):
        self.kubeconfig = kubeconfig
        with open(kubeconfig) as f:
            config = yaml.safe_load(f)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        url = urllib.parse.urlparse(cluster["server"])
        self.host, self.port = url.hostname, url.port or 443
        self.context = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        self.context.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))

    @staticmethod
    def _file(section: dict, key: str) -> str:
        if key in section:
            return section[key]
        data = base64.b64decode(section[f"{key}-data"])
        handle, path = tempfile.mkstemp()
        os.write(handle, data)
        os.close(handle)
        return path

    def request(self, method: str, path: str, body=None, content_type: str = "application/json", timeout=15):
        """(status, decoded JSON or text) of one request."""
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                headers["Content-Type"] = content_type
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw or b"{}")
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def get(self, path: str):
        status, body = self.request("GET", path)
        return body if status == 200 else None

    def must(self, method: str, path: str, body=None, content_type: str = "application/json"):
        status, answer = self.request(method, path, body, content_type)
        assert 200 <= status < 300, f"{method} {path}: {status} {answer}"
        return answer

    def merge_patch(self, path: str, patch: dict):
        return self.must("PATCH", path, patch, "application/merge-patch+json")

    def metric_sum(self, name: str, label_filter: str) -> float:
        """The sum of a metric of the API server's /metrics over the series whose labels match."""
        status, text = self.request("GET", "/metrics")
        assert status == 200, text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") and re.search(label_filter, line):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr}")
        return result.stdout

    def apply(self, documents: list[dict]):
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(documents))

    def wait_for(self, what: str, check, timeout: float, interval: float = 0.5):
        """Polls `check()` until it returns something truthy; fails naming `what` after `timeout` s."""
        deadline = time.time() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.time() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)
