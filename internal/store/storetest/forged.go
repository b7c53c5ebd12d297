package storetest

import (
	"hash/crc32"
	"strings"
)

// ForgedSecret is key with its secret replaced and a checksum that holds: what anyone can write
// who read the key's public id (in a log, on a key list) without knowing its secret. The
// checksum is the key format's (base62 of CRC32 over the rest, six characters).
func ForgedSecret(key string) string {
	head := key[:len(key)-6]
	i := strings.LastIndexByte(head, '_')
	head = head[:i+1] + strings.Repeat("A", len(head)-i-1)
	const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	v := uint64(crc32.ChecksumIEEE([]byte(head)))
	sum := make([]byte, 6)
	for j := 5; j >= 0; j-- {
		sum[j] = base62[v%62]
		v /= 62
	}
	return head + string(sum)
}
