"""The local control plane's certificates, made with openssl: one CA, the kube-apiserver's serving
certificate, and a client certificate per component (the CN is the user, O the group, as the
apiserver's x509 authenticator reads them).

    pki = Pki(directory)
    pki.ensure_ca()
    pki.serving("kube-apiserver", dns=["localhost", "kubernetes.default.svc"], ips=["127.0.0.1"])
    pki.client("admin", user="kubernetes-admin", group="system:masters")
    pki.service_account_keys()   # sa.key / sa.pub for bound service-account tokens

Files are PEM, keys mode 0600, named NAME.crt / NAME.key under `directory`. Existing files are
kept, so a restarted control plane keeps trusting what it issued before.
"""

import os
import subprocess

# Long enough for a development cluster left running; the files are made anew with the cluster.
DAYS = "825"


def _openssl(*args, cwd):
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError("openssl %s failed (exit %d): %s" %
                           (args[0], done.returncode, done.stderr.strip()[-800:]))


class Pki:
    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def _key(self, name):
        key = self.path(name + ".key")
        if not os.path.exists(key):
            _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-out", key, cwd=self.dir)
            os.chmod(key, 0o600)
        return key

    def ensure_ca(self):
        if os.path.exists(self.path("ca.crt")):
            return
        key = self._key("ca")
        _openssl("req", "-x509", "-new", "-key", key, "-sha256", "-days", DAYS,
                 "-subj", "/CN=gpuadmit-local-cluster-ca", "-addext",
                 "basicConstraints=critical,CA:TRUE", "-addext",
                 "keyUsage=critical,keyCertSign,cRLSign", "-out", self.path("ca.crt"),
                 cwd=self.dir)

    def _sign(self, name, subject, extensions):
        crt = self.path(name + ".crt")
        if os.path.exists(crt):
            return crt
        key = self._key(name)
        csr = self.path(name + ".csr")
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write("\n".join(extensions) + "\n")
        _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr, cwd=self.dir)
        _openssl("x509", "-req", "-in", csr, "-CA", self.path("ca.crt"), "-CAkey",
                 self.path("ca.key"), "-CAcreateserial", "-sha256", "-days", DAYS,
                 "-extfile", ext, "-out", crt, cwd=self.dir)
        os.remove(csr)
        os.remove(ext)
        return crt

    def serving(self, name, dns, ips):
        names = ["DNS:" + d for d in dns] + ["IP:" + i for i in ips]
        return self._sign(name, "/CN=" + name, [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=serverAuth",
            "subjectAltName=" + ",".join(names),
        ])

    def client(self, name, user, group=None):
        subject = "/CN=" + user + ("/O=" + group if group else "")
        return self._sign(name, subject, [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=clientAuth",
        ])

    def service_account_keys(self):
        key = self._key("sa")
        pub = self.path("sa.pub")
        if not os.path.exists(pub):
            _openssl("pkey", "-in", key, "-pubout", "-out", pub, cwd=self.dir)
        return key, pub
