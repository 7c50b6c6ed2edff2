#!/usr/bin/env python3
# Copied from the realnode harness (shared/realnode/mkimage.py beside this repository), unchanged but for this note.
"""Make a docker-archive image tar (for `ctr -n k8s.io images import`) from a root directory, no registry/daemon needed.
usage: mkimage.py ROOTDIR NAME:TAG OUT.tar [--entrypoint JSON] [--cmd JSON] [--env K=V ...] [--user U] [--workdir D]"""
import argparse, hashlib, io, json, os, tarfile, time

ap = argparse.ArgumentParser()
ap.add_argument("root"); ap.add_argument("ref"); ap.add_argument("out")
ap.add_argument("--entrypoint"); ap.add_argument("--cmd"); ap.add_argument("--env", action="append", default=[])
ap.add_argument("--user"); ap.add_argument("--workdir")
a = ap.parse_args()

buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    for dirpath, dirnames, filenames in os.walk(a.root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            arc = os.path.relpath(full, a.root)
            ti = t.gettarinfo(full, arcname=arc)
            ti.uid = ti.gid = 0; ti.uname = ti.gname = ""; ti.mtime = 0
            if ti.isfile():
                with open(full, "rb") as f: t.addfile(ti, f)
            else:
                t.addfile(ti)
layer = buf.getvalue()
diff = "sha256:" + hashlib.sha256(layer).hexdigest()
cfg = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + a.env}
if a.entrypoint: cfg["Entrypoint"] = json.loads(a.entrypoint)
if a.cmd: cfg["Cmd"] = json.loads(a.cmd)
if a.user: cfg["User"] = a.user
if a.workdir: cfg["WorkingDir"] = a.workdir
config = json.dumps({"architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z", "config": cfg,
                     "rootfs": {"type": "layers", "diff_ids": [diff]}, "history": [{"created_by": "mkimage.py"}]}).encode()
cid = hashlib.sha256(config).hexdigest()
manifest = json.dumps([{"Config": cid + ".json", "RepoTags": [a.ref], "Layers": [diff[7:] + "/layer.tar"]}]).encode()
with tarfile.open(a.out, "w") as t:
    for n, data in ((cid + ".json", config), (diff[7:] + "/layer.tar", layer), ("manifest.json", manifest)):
        ti = tarfile.TarInfo(n); ti.size = len(data); ti.mtime = int(time.time()); t.addfile(ti, io.BytesIO(data))
print(a.ref, "config", cid[:12], "layer", diff[7:19], len(layer), "bytes")
