package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// SASL mechanisms accepted in SASLConfig.Mechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Security says how to authenticate to and encrypt traffic with the brokers.
// The zero value is plaintext without authentication.
type Security struct {
	TLS  *TLSConfig  // nil: no TLS
	SASL *SASLConfig // nil: no SASL
}

// TLSConfig is the file-based TLS setup operators usually have at hand.
type TLSConfig struct {
	CAFile             string // PEM bundle; empty uses the system pool
	CertFile, KeyFile  string // client certificate for mTLS; both or neither
	ServerName         string // overrides the name checked in the broker certificate
	InsecureSkipVerify bool   // only for tests against self-signed brokers
}

// SASLConfig names a mechanism and its credentials.
type SASLConfig struct {
	Mechanism          string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Username, Password string
}

// Validate checks s, naming the field that is wrong.
func (s Security) Validate() error {
	if s.TLS != nil && (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		return errors.New("Security.TLS: CertFile and KeyFile must be set together")
	}
	if s.SASL != nil && s.SASL.Username == "" {
		return errors.New("Security.SASL.Username is required")
	}
	_, err := s.mechanism()
	return err
}

// Config is t as a crypto/tls config, for other TLS clients of the same
// operators' files (the schema registry's).
func (t *TLSConfig) Config() (*tls.Config, error) { return Security{TLS: t}.tlsConfig() }

func (s Security) tlsConfig() (*tls.Config, error) {
	if s.TLS == nil {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         s.TLS.ServerName,
		InsecureSkipVerify: s.TLS.InsecureSkipVerify, //nolint:gosec // opt-in, for test brokers
	}
	if s.TLS.CAFile != "" {
		pem, err := os.ReadFile(s.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("Security.TLS.CAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("Security.TLS.CAFile: no PEM certificates in %s", s.TLS.CAFile)
		}
		c.RootCAs = pool
	}
	if s.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.TLS.CertFile, s.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("Security.TLS.CertFile/KeyFile: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func (s Security) mechanism() (sasl.Mechanism, error) {
	if s.SASL == nil {
		return nil, nil
	}
	switch strings.ToUpper(s.SASL.Mechanism) {
	case SASLPlain:
		return plain.Mechanism{Username: s.SASL.Username, Password: s.SASL.Password}, nil
	case SASLScramSHA256:
		return scram.Mechanism(scram.SHA256, s.SASL.Username, s.SASL.Password)
	case SASLScramSHA512:
		return scram.Mechanism(scram.SHA512, s.SASL.Username, s.SASL.Password)
	}
	return nil, fmt.Errorf("Security.SASL.Mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", s.SASL.Mechanism)
}

// parts checks s and builds what both the Dialer and the Transport carry.
func (s Security) parts() (*tls.Config, sasl.Mechanism, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	t, err := s.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	m, err := s.mechanism()
	return t, m, err
}

// Dialer builds the connection dialer used for group membership and fetches.
func (s Security) Dialer() (*kafkago.Dialer, error) {
	t, m, err := s.parts()
	if err != nil {
		return nil, err
	}
	return &kafkago.Dialer{
		ClientID:      "lakewap",
		Timeout:       10 * time.Second,
		DualStack:     true,
		TLS:           t,
		SASLMechanism: m,
	}, nil
}

// Transport builds the round tripper used for produce, list-offsets and admin
// requests.
func (s Security) Transport() (*kafkago.Transport, error) {
	t, m, err := s.parts()
	if err != nil {
		return nil, err
	}
	return &kafkago.Transport{
		ClientID:    "lakewap",
		DialTimeout: 10 * time.Second,
		TLS:         t,
		SASL:        m,
	}, nil
}
