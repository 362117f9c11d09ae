// The reference side of the log's tiles and proofs (test/integration/log-interop.test.ts): Go's
// golang.org/x/mod/sumdb/note and sumdb/tlog (Debian's golang-golang-x-mod-dev, built offline)
// read the registry's log over HTTP as any CT-style monitor would.
//
//	main check <base URL> <log vkey> <witness vkey> <index> <old size> <old root, base64>
//
// opens <base>/checkpoint with the log's key and the witness's cosignature key (tlog-cosignature
// v1: Go's note package has no verifier for it, so a Verifier here), reads the hash tiles through
// tlog.TileHashReader (which authenticates every tile against the checkpoint's root), recomputes
// the root, proves and checks entry <index> (read from its entries bundle) and the consistency
// with the older tree; prints the proofs Go made, in hex, for the test to compare with the
// registry's.
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func get(url string) []byte {
	res, err := http.Get(url)
	if err != nil {
		fail("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		fail("GET %s: %d %v", url, res.StatusCode, err)
	}
	return body
}

// cosigVerifier checks a tlog-cosignature/v1 signature: 8 bytes of time, then Ed25519 over
// "cosignature/v1\ntime <t>\n" and the note's text.
type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v cosigVerifier) Name() string    { return v.name }
func (v cosigVerifier) KeyHash() uint32 { return v.hash }
func (v cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 72 {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	return ed25519.Verify(v.key, append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...), sig[8:])
}

func parseCosigKey(vkey string) cosigVerifier {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		fail("malformed witness key")
	}
	h, err := strconv.ParseUint(parts[1], 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || err2 != nil || len(key) != 33 || key[0] != 4 {
		fail("malformed witness key")
	}
	return cosigVerifier{name: parts[0], hash: uint32(h), key: ed25519.PublicKey(key[1:])}
}

// httpTiles reads hash tiles at <base>/tile/<L>/<N>[.p/<W>] (C2SP's paths: Go's without the height).
type httpTiles struct{ base string }

func (r httpTiles) Height() int { return 8 }
func (r httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		out[i] = get(r.base + "/" + strings.Replace(t.Path(), "tile/8/", "tile/", 1))
	}
	return out, nil
}
func (r httpTiles) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func hexes(hs []tlog.Hash) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = hex.EncodeToString(h[:])
	}
	return strings.Join(s, ",")
}

func main() {
	if len(os.Args) != 8 || os.Args[1] != "check" {
		fail("usage: main check <base URL> <log vkey> <witness vkey> <index> <old size> <old root>")
	}
	base := os.Args[2]
	logKey, err := note.NewVerifier(os.Args[3])
	if err != nil {
		fail("log key: %v", err)
	}
	witness := parseCosigKey(os.Args[4])
	index, _ := strconv.ParseInt(os.Args[5], 10, 64)
	oldSize, _ := strconv.ParseInt(os.Args[6], 10, 64)
	oldRoot, err := tlog.ParseHash(os.Args[7])
	if err != nil {
		fail("old root: %v", err)
	}

	n, err := note.Open(get(base+"/checkpoint"), note.VerifierList(logKey, witness))
	if err != nil {
		fail("checkpoint: %v", err)
	}
	names := []string{}
	for _, s := range n.Sigs {
		names = append(names, s.Name)
	}
	lines := strings.Split(n.Text, "\n")
	size, _ := strconv.ParseInt(lines[1], 10, 64)
	root, err := tlog.ParseHash(lines[2])
	if err != nil || lines[0] != logKey.Name() {
		fail("checkpoint text: %q", n.Text)
	}
	tree := tlog.Tree{N: size, Hash: root}
	hr := tlog.TileHashReader(tree, httpTiles{base})
	th, err := tlog.TreeHash(size, hr)
	if err != nil || th != root {
		fail("the tiles do not lead to the checkpoint's root: %v", err)
	}

	// The entry, from its bundle: uint16 big-endian lengths.
	tile := index / 256
	width := size - tile*256
	if width > 256 {
		width = 256
	}
	path := tlog.Tile{H: 8, L: 0, N: tile, W: int(width)}.Path()
	bundle := get(base + "/" + strings.Replace(path, "tile/8/0/", "tile/entries/", 1))
	var entry []byte
	for i, at := int64(0), 0; at < len(bundle); i++ {
		l := int(binary.BigEndian.Uint16(bundle[at:]))
		if i == index%256 {
			entry = bundle[at+2 : at+2+l]
		}
		at += 2 + l
	}
	inclusion, err := tlog.ProveRecord(size, index, hr)
	if err != nil {
		fail("prove record: %v", err)
	}
	if err := tlog.CheckRecord(inclusion, size, root, index, tlog.RecordHash(entry)); err != nil {
		fail("check record: %v", err)
	}
	consistency, err := tlog.ProveTree(size, oldSize, hr)
	if err != nil {
		fail("prove tree: %v", err)
	}
	if err := tlog.CheckTree(consistency, size, root, oldSize, oldRoot); err != nil {
		fail("check tree: %v", err)
	}
	fmt.Printf("cosigners %s\nsize %d\nentry %s\ninclusion %s\nconsistency %s\n", strings.Join(names, ","), size, entry, hexes(inclusion), hexes(consistency))
}
