"""A real kube-apiserver for the optional tests (test_*_live.py): named by TIDAL_TEST_APISERVER, with
TIDAL_TEST_TOKEN (a system:masters user's token) and TIDAL_TEST_CA. Without it they are skipped."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request

import pytest

SERVER = os.environ.get("TIDAL_TEST_APISERVER")
needed = pytest.mark.skipif(not SERVER, reason="TIDAL_TEST_APISERVER not set: no real API server")


def call(
    method: str,
    path: str,
    body=None,
    impersonate: str | None = None,
    content_type: str = "application/json",
):
    """(status code, decoded body) of one request as the admin, or as `impersonate`."""
    headers = {"Authorization": f"Bearer {os.environ['TIDAL_TEST_TOKEN']}", "Accept": "application/json"}
    if impersonate:
        # Policies match on the user name; the group only spares the tests an RBAC setup.
        headers["Impersonate-User"] = impersonate
        headers["Impersonate-Group"] = "system:masters"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = content_type
    request = urllib.request.Request(SERVER + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=os.environ.get("TIDAL_TEST_CA"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")
