package auth

import (
	"encoding/base64"
	"hash/crc32"
	"strings"
	"testing"
)

var std = Format{Prefix: DefaultPrefix}

func mustMint(t testing.TB, f Format) (string, string) {
	t.Helper()
	key, id, err := f.Mint()
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// withChecksum rebuilds a key's checksum over head so only the part under test is wrong.
func withChecksum(head string) string { return head + checksum(head) }

// TestKEY04_ParseTable proves KEY-04, KEY-05, KEY-07, KEY-08: every shape rejection, by length,
// prefix, alphabet of each part, separator and checksum, and the id alone with or without the prefix.
func TestKEY04_ParseTable(t *testing.T) {
	key, id := mustMint(t, std)
	if len(key) != 69 || std.Len() != 69 {
		t.Fatalf("a svc_sk_ key is %d characters (Len %d), want 69 (KEY-05)", len(key), std.Len())
	}
	head := key[:len(key)-checksumLen] // prefix + id + _ + secret
	secret := key[len(DefaultPrefix)+idLen+1 : len(key)-checksumLen]
	replaceAt := func(s string, i int, c byte) string { return s[:i] + string(c) + s[i+1:] }
	idAt, secAt, sepAt := len(DefaultPrefix), len(DefaultPrefix)+idLen+1, len(DefaultPrefix)+idLen
	wrongSum := key[:len(key)-1] + string("0123456789"[(strings.IndexByte(base62, key[len(key)-1])+1)%10])
	if wrongSum == key {
		wrongSum = key[:len(key)-1] + "a"
	}
	cases := []struct {
		name, raw string
	}{
		{"empty", ""},
		{"id alone", id},
		{"prefix and id", DefaultPrefix + id},
		{"prefix, id and separator", DefaultPrefix + id + "_"},
		{"one short", key[:len(key)-1]},
		{"one long", key + "A"},
		{"71 characters", key + "AB"},
		{"whitespace around", " " + key[1:]},
		{"wrong prefix same length", "svc_pk_" + key[len(DefaultPrefix):]},
		{"prefix case", strings.ToUpper(DefaultPrefix) + key[len(DefaultPrefix):]},
		{"no prefix, padded", "xxxxxxx" + key[len(DefaultPrefix):]},
		{"id not base62 (dash)", withChecksum(replaceAt(head, idAt+3, '-'))},
		{"id not base62 (underscore)", withChecksum(replaceAt(head, idAt, '_'))},
		{"id not base62 (non-ASCII)", withChecksum(replaceAt(head, idAt+11, 0xe9))},
		{"separator not underscore", withChecksum(replaceAt(head, sepAt, '-'))},
		{"separator is a letter", withChecksum(replaceAt(head, sepAt, 'A'))},
		{"secret with plus", withChecksum(replaceAt(head, secAt+5, '+'))},
		{"secret with slash", withChecksum(replaceAt(head, secAt, '/'))},
		{"secret with padding", withChecksum(replaceAt(head, secAt+42, '='))},
		{"checksum with dash", head + "AAAAA-"},
		{"checksum with underscore", head + "_AAAAA"},
		{"checksum wrong", wrongSum},
		{"checksum of another key", head + checksum(head+"x")},
		{"one secret char changed, checksum kept", replaceAt(key, secAt+7, flip(key[secAt+7]))},
		{"one id char changed, checksum kept", replaceAt(key, idAt+2, flip(key[idAt+2]))},
		{"Bearer left on", "Bearer " + key[:len(key)-7]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if pk, err := std.Parse(c.raw); err != ErrMalformedKey {
				t.Fatalf("Parse(%q) = %+v, %v; want ErrMalformedKey", c.raw, pk, err)
			}
		})
	}
	pk, err := std.Parse(key)
	if err != nil || pk.ID != id || pk.Secret != secret {
		t.Fatalf("valid key: %+v %v", pk, err)
	}
	// A secret may use both base64url extras; the checksum alone decides.
	odd := withChecksum(DefaultPrefix + id + "_" + strings.Repeat("-", 21) + strings.Repeat("_", 22))
	if _, err := std.Parse(odd); err != nil {
		t.Fatalf("secret of - and _ refused: %v", err)
	}
	// KEY-05: the prefix is deployment-configurable and the length follows it.
	alt := Format{Prefix: "acme_live_"}
	k2, _ := mustMint(t, alt)
	if len(k2) != alt.Len() || len(k2) != 72 || !strings.HasPrefix(k2, "acme_live_") {
		t.Fatalf("alt prefix key %q", k2)
	}
	if _, err := alt.Parse(k2); err != nil {
		t.Fatal(err)
	}
	if _, err := std.Parse(k2); err == nil {
		t.Fatal("a key of another prefix parsed")
	}
	if _, err := alt.Parse(key); err == nil {
		t.Fatal("a svc_sk_ key parsed under another prefix")
	}
}

func flip(c byte) byte {
	if c == 'A' {
		return 'B'
	}
	return 'A'
}

// TestKEY06_ChecksumDefinition proves KEY-06: id base62, secret 32 random bytes base64url without
// padding, checksum base62 of CRC32 over every character before it, zero-padded to 6.
func TestKEY06_ChecksumDefinition(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		key, id := mustMint(t, std)
		if seen[id] {
			t.Fatalf("id %s minted twice", id)
		}
		seen[id] = true
		for i := 0; i < len(id); i++ {
			if !strings.ContainsRune(base62, rune(id[i])) {
				t.Fatalf("id %q not base62", id)
			}
		}
		secret := key[len(DefaultPrefix)+idLen+1 : len(key)-checksumLen]
		raw, err := base64.RawURLEncoding.DecodeString(secret)
		if err != nil || len(raw) != 32 || strings.Contains(secret, "=") {
			t.Fatalf("secret %q: %d bytes, %v", secret, len(raw), err)
		}
		// The reference definition, written out independently.
		v := crc32.ChecksumIEEE([]byte(key[:len(key)-6]))
		want := make([]byte, 6)
		for i := 5; i >= 0; i-- {
			want[i] = base62[v%62]
			v /= 62
		}
		if got := key[len(key)-6:]; got != string(want) {
			t.Fatalf("checksum %s, want %s", got, want)
		}
	}
	// Zero padding: a CRC below 62^5 still gives 6 characters with leading zeros.
	if got := checksum(""); got != "000000" || len(checksum("a")) != 6 {
		t.Fatalf("checksum(\"\") = %q (CRC32 of nothing is 0)", got)
	}
	// 62^6 > 2^32: every CRC32 fits in six base62 characters.
	if c := checksum("The quick brown fox"); len(c) != 6 {
		t.Fatal(c)
	}
}

// TestKEY10_HashOnly proves KEY-10 at the hasher: the stored value is the HMAC-SHA256 of the
// secret under the deployment secret, not the secret, and differs across deployment secrets.
func TestKEY10_HashOnly(t *testing.T) {
	h := NewHasher("deployment-secret")
	if !h.Configured() || NewHasher("").Configured() {
		t.Fatal("Configured")
	}
	key, _ := mustMint(t, std)
	pk, _ := std.Parse(key)
	stored := h.Hash(pk.Secret)
	// Known answer: HMAC-SHA256("deployment-secret", "abc").
	if got := h.Hash("abc"); got != "9ce17d5c86ffc7c9d9f64a0df9cdbd10e34494ac5df68bc9998fefc4fe3a5ce0" {
		t.Fatalf("Hash(abc) = %s, want hex HMAC-SHA256 under the deployment secret", got)
	}
	if strings.Contains(stored, pk.Secret) || strings.Contains(stored, pk.ID) || len(stored) != 64 {
		t.Fatalf("stored %q leaks the key or is not a SHA-256", stored)
	}
	if NewHasher("other").Hash(pk.Secret) == stored {
		t.Fatal("the hash does not depend on the deployment secret")
	}
	if !h.Equal(pk.Secret, stored) || h.Equal(pk.Secret+"x", stored) || h.Equal(pk.Secret, "") {
		t.Fatal("Equal")
	}
}

// FuzzParseKey: Parse never panics; whatever it accepts re-serialises to the same string, has
// the fixed widths and a valid checksum (KEY-04, KEY-06, KEY-07).
func FuzzParseKey(f *testing.F) {
	key, id := mustMint(f, std)
	for _, s := range []string{"", key, id, DefaultPrefix + id, key[:68], key + "x", strings.Repeat("_", 69),
		withChecksum(DefaultPrefix + strings.Repeat("A", 12) + "_" + strings.Repeat("-", 43))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pk, err := std.Parse(s)
		if err != nil {
			if pk != (ParsedKey{}) {
				t.Fatalf("refused but returned %+v", pk)
			}
			return
		}
		if len(pk.ID) != idLen || len(pk.Secret) != secretLen {
			t.Fatalf("widths %d/%d", len(pk.ID), len(pk.Secret))
		}
		if again := withChecksum(DefaultPrefix + pk.ID + "_" + pk.Secret); again != s {
			t.Fatalf("re-serialised %q != %q", again, s)
		}
	})
}
