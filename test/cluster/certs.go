package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the set of credentials one control plane needs. ECDSA keys are used
// throughout because generating them is instant, unlike RSA.
type pki struct {
	caCert, caKey             string
	servingCert, servingKey   string
	adminCert, adminKey       string
	saPublicKey, saPrivateKey string
	caPEM, adminCertPEM       []byte
	adminKeyPEM               []byte
}

func generatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saPublicKey: filepath.Join(dir, "sa.pub"), saPrivateKey: filepath.Join(dir, "sa.key"),
	}
	now := time.Now()

	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubectl-gray-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	if err := writeCertAndKey(p.caCert, p.caKey, caDER, caKey); err != nil {
		return nil, err
	}

	sign := func(serial int64, tmpl *x509.Certificate, certPath, keyPath string) ([]byte, []byte, error) {
		key, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("sign %s: %w", tmpl.Subject.CommonName, err)
		}
		if err := writeCertAndKey(certPath, keyPath, der, key); err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
	}

	if _, _, err := sign(2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}, p.servingCert, p.servingKey); err != nil {
		return nil, err
	}
	// system:masters bypasses RBAC: this identity is the cluster admin used by
	// the built-in components and the tests' own set-up.
	p.adminCertPEM, p.adminKeyPEM, err = sign(3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, p.adminCert, p.adminKey)
	if err != nil {
		return nil, err
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPrivateKey, pemBlock("EC PRIVATE KEY", saKeyDER), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPublicKey, pemBlock("PUBLIC KEY", saPubDER), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func writeCertAndKey(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pemBlock("CERTIFICATE", der), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pemBlock("EC PRIVATE KEY", keyDER), 0o600)
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
