"""Test certificates made with the openssl command line (Debian's openssl)
into a temporary folder: a CA, server certificates signed by it, client
certificates with chosen subject CNs, and a second CA whose clients the
server must refuse.

    pki = Pki(tmpdir)
    pki.server            -> (cert, key) for CN "localhost" (SAN 127.0.0.1)
    pki.issue("alice")    -> (cert, key) of a client with subject CN alice
    pki.ca                -> the CA certificate file
    client_ctx(pki, ...)  -> an ssl client context trusting pki's CA
    peer_cn(tls_socket)   -> the subject CN of the certificate the server sent
"""

import os
import ssl
import subprocess


def _run(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)


class Pki:
    def __init__(self, folder, name="ca"):
        self.dir = folder
        os.makedirs(folder, exist_ok=True)
        self.ca_key = os.path.join(folder, name + ".key")
        self.ca = os.path.join(folder, name + ".crt")
        # EC keys: fast to make, so a test module pays milliseconds for its PKI.
        _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", self.ca_key, "-out", self.ca, "-days", "3650",
             "-subj", "/CN=Trove Test CA " + name)
        self.server = self.issue("localhost", server=True)

    def issue(self, cn, server=False, days=3650, name=None, ou="Trove tests"):
        """A certificate and key signed by this CA; days < 0 makes one that
        has already expired."""
        base = os.path.join(self.dir, name or cn.replace("/", "_"))
        key, csr, crt = base + ".key", base + ".csr", base + ".crt"
        ext = base + ".ext"
        with open(ext, "w") as f:
            if server:
                f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                        "extendedKeyUsage=serverAuth\n")
            else:
                f.write("extendedKeyUsage=clientAuth\n")
        _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key, "-out", csr, "-subj", "/OU=%s/CN=%s" % (ou, cn))
        # days < 0: notAfter lies before notBefore (now), already expired.
        _run("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
             "-CAcreateserial", "-out", crt, "-days", str(days), "-extfile", ext)
        return crt, key


def client_ctx(pki, cert=None, version=None):
    """A client context that trusts pki's CA (no host name check); cert is a
    (cert, key) pair to present; version pins one TLS version."""
    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.check_hostname = False
    if cert is not None:
        ctx.load_cert_chain(*cert)
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    return ctx


def peer_cn(sock):
    """The subject CN of the certificate the server of `sock` presented."""
    der = sock.getpeercert(binary_form=True)
    out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"],
                         input=der, capture_output=True, check=True, timeout=30).stdout.decode()
    return out.strip().split("CN = ")[-1]
