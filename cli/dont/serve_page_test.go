package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startedServe is a dont serve whose stdout line and stderr are kept.
type startedServe struct {
	line   map[string]string
	mu     sync.Mutex
	stderr []string
	seen   chan struct{}
}

func (s *startedServe) stderrLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stderr...)
}

// waitStderr waits for a stderr line containing want.
func (s *startedServe) waitStderr(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, l := range s.stderrLines() {
			if strings.Contains(l, want) {
				return l
			}
		}
		select {
		case <-s.seen:
		case <-deadline:
			t.Fatalf("dont serve never said %q on stderr: %q", want, s.stderrLines())
		}
	}
}

func (p *testProject) startServe(t *testing.T, args ...string) *startedServe {
	t.Helper()
	c := p.cmd(append([]string{"serve"}, args...)...)
	out, _ := c.StdoutPipe()
	errPipe, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	s := &startedServe{seen: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr = append(s.stderr, sc.Text())
			s.mu.Unlock()
			select {
			case s.seen <- struct{}{}:
			default:
			}
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address: %v (stderr %q)", err, s.stderrLines())
	}
	if err := json.Unmarshal([]byte(line), &s.line); err != nil || s.line["listening"] == "" {
		t.Fatalf("serve's first line is %q", line)
	}
	return s
}

// testCert writes a self-signed certificate for 127.0.0.1 and its key.
func testCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dont test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// dont serve says where the approvals page is: in its first stdout line
// (which keeps its listening field for programs) and in words on stderr.
// On loopback over plain HTTP it warns about nothing.
func TestServePrintsTheApprovalsPageURL(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.startServe(t, "--addr", "127.0.0.1:0")
	base := s.line["listening"]
	if !strings.HasPrefix(base, "http://127.0.0.1:") || s.line["approvals"] != base+"/approvals" {
		t.Fatalf("serve's first line: %v", s.line)
	}
	s.waitStderr(t, "the approvals page is "+base+"/approvals")
	resp, err := http.Get(s.line["approvals"])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %d %s", s.line["approvals"], resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, l := range s.stderrLines() {
		if strings.Contains(l, "warning") {
			t.Fatalf("a loopback server warned: %q", l)
		}
	}
}

// Listening on every interface over plain HTTP puts tokens on the network
// in clear: dont serve warns, and names the way out.
func TestServeWarnsWhenItListensBeyondLoopbackWithoutTLS(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	s := p.startServe(t, "--addr", "0.0.0.0:0")
	w := s.waitStderr(t, "warning")
	for _, want := range []string{"plain HTTP", "--tls-cert", "--tls-key", "127.0.0.1"} {
		if !strings.Contains(w, want) {
			t.Errorf("the warning lacks %q: %q", want, w)
		}
	}
	s.waitStderr(t, "the approvals page is http://localhost:")
}

// --tls-cert and --tls-key serve HTTPS: the remote CLI and a browser reach
// the page and the API over TLS with a test certificate made here.
func TestWebPageOverHTTPSWithATestCertificate(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	certFile, keyFile, pool := testCert(t)
	p := newApprovalProject(t)
	approver := p.mintToken("approver", "alice")
	harness := p.mintToken("harness", "build-bot")
	s := p.startServe(t, "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	base := s.line["listening"]
	if !strings.HasPrefix(base, "https://127.0.0.1:") || s.line["approvals"] != base+"/approvals" {
		t.Fatalf("serve's first line with TLS: %v", s.line)
	}
	s.waitStderr(t, "the approvals page is "+base+"/approvals")

	// A client that verifies the certificate gets the page; plain HTTP does not.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(base + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET over TLS: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + strings.TrimPrefix(base, "https://") + "/approvals"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the HTTPS server answered plain HTTP with the page")
		}
		resp.Body.Close()
	}

	page := newBrowser(t, window{width: 1100, height: 900, trustAnyCert: true})
	page.open(t, s.line["approvals"], approver)
	// The remote CLI trusts the test certificate through SSL_CERT_FILE.
	remote := []string{"DONT_ENDPOINT=" + base, "SSL_CERT_FILE=" + certFile, "DONT_TOKEN=" + harness}
	ses := p.runEnv(remote, "sessions", "open", "--tier", "read-only", "--name", "tls").str("session_id")
	apr := p.runEnv(remote, "escalate", "--session", ses, "--call", "tls-1", "--to", "workspace-write", "--reason", "over TLS", "--no-wait", "--", "make").str("approval_id")
	if !strings.HasPrefix(apr, "apr:") {
		t.Fatal("escalate over HTTPS returned no approval id")
	}
	page.waitCount(t, cardOf(apr), 1)
	if err := page.answer(cardOf(apr), "approve"); err != nil {
		t.Fatal(err)
	}
	page.waitText(t, endingOf(apr), "approved by alice")
	if v := p.ok("approvals", "show", apr).str("verdict"); v != "approved" {
		t.Fatalf("verdict %q", v)
	}
}

// Half a TLS pair is a usage error, and nothing listens.
func TestServeRefusesHalfATLSPair(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	certFile, _, _ := testCert(t)
	r := p.run("serve", "--addr", "127.0.0.1:0", "--tls-cert", certFile)
	if r.exit != 2 || r.env["ok"] != false {
		t.Fatalf("serve with --tls-cert only: exit %d %s", r.exit, r.stdout)
	}
	if rem, _ := r.data()["remediation"].([]any); len(rem) == 0 {
		t.Fatalf("no remediation: %s", r.stdout)
	}
}
