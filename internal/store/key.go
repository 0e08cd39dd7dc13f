package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// KeyHelp says how to make a key.
const KeyHelp = "make one with `openssl rand -hex 32` and keep it: the tokens in the store open only with it"

// Key encrypts tokens at rest with AES-256-GCM.
type Key struct{ aead cipher.AEAD }

// ParseKey reads a 32-byte key written as 64 hex digits or in base64.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		b, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil || len(b) != 32 {
		return nil, errors.New("not a 32-byte key in hex or base64")
	}
	block, err := aes.NewCipher(b)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead}, nil
}

// sealedPrefix marks a sealed value (and its format's version).
const sealedPrefix = "v1:"

// seal encrypts plain, bound to where (a row and a column), so that a
// sealed value copied into another row does not open.
func (k *Key) seal(plain, where string) string {
	if plain == "" {
		return ""
	}
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand never fails on Linux
	out := k.aead.Seal(nonce, nonce, []byte(plain), []byte(where))
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(out)
}

// open decrypts a value of seal.
func (k *Key) open(sealed, where string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(sealed, sealedPrefix))
	n := k.aead.NonceSize()
	if err != nil || !strings.HasPrefix(sealed, sealedPrefix) || len(b) < n {
		return "", ErrWrongKey
	}
	plain, err := k.aead.Open(nil, b[:n], b[n:], []byte(where))
	if err != nil {
		return "", ErrWrongKey
	}
	return string(plain), nil
}
