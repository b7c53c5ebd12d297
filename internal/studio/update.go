package studio

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MalformedError says why bytes are not a Yjs update (format v1, the yjs default). Nothing
// stored changes when an update is refused with it.
type MalformedError struct {
	Offset int    // byte offset where reading stopped
	Reason string // what was expected there
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("not a Yjs update: %s at byte %d", e.Reason, e.Offset)
}

// maxAnyDepth bounds nesting of lib0 "any" values (objects in arrays in objects...) far above
// what yjs itself can read back (its recursive decoder runs out of stack at a few thousand
// levels in Node), so every document yjs produces is accepted; the bound only keeps the
// recursion of this reader and of the merging library to a stack of a few megabytes.
const maxAnyDepth = 100_000

// reader reads lib0 encodings from a byte slice; the first failure sticks.
type reader struct {
	b   []byte
	pos int
	err *MalformedError
}

func (r *reader) fail(reason string) {
	if r.err == nil {
		r.err = &MalformedError{Offset: r.pos, Reason: reason}
	}
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("end of data before " + what)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// uint reads a lib0 varuint of at most 53 bits (a JavaScript safe integer, as yjs writes).
func (r *reader) uint(what string) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.byte(what)
		if r.err != nil {
			return 0
		}
		if shift > 49 {
			r.fail(what + " is over 53 bits")
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
}

// int reads a lib0 varint (sign in bit 6 of the first byte).
func (r *reader) int(what string) {
	c := r.byte(what)
	for shift := 6; c >= 0x80 && r.err == nil; shift += 7 {
		if shift > 55 {
			r.fail(what + " is over 53 bits")
			return
		}
		c = r.byte(what)
	}
}

func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.pos) {
		r.fail(fmt.Sprintf("%s of %d bytes past the end", what, n))
		return nil
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

func (r *reader) string(what string) string {
	s := r.bytes(r.uint(what+" length"), what)
	if r.err == nil && !utf8.Valid(s) {
		r.fail(what + " is not UTF-8")
	}
	return string(s)
}

// count reads a count of elements each taking at least one byte, refusing counts the rest of
// the data cannot hold (so no loop runs longer than the input).
func (r *reader) count(what string) uint64 {
	n := r.uint(what)
	if r.err == nil && n > uint64(len(r.b)-r.pos) {
		r.fail(fmt.Sprintf("%s %d is more than the data holds", what, n))
		return 0
	}
	return n
}

func (r *reader) json(what string) {
	s := r.string(what)
	if r.err == nil && s != "undefined" && !json.Valid([]byte(s)) {
		r.fail(what + " is not JSON")
	}
}

func (r *reader) any(depth int) {
	if depth > maxAnyDepth {
		r.fail("value nested too deep")
		return
	}
	switch tag := r.byte("value tag"); tag {
	case 127, 126, 121, 120: // undefined, null, false, true
	case 125:
		r.int("integer")
	case 124:
		r.bytes(4, "float32")
	case 123, 122:
		r.bytes(8, "float64")
	case 119:
		r.string("string value")
	case 118:
		for n := r.count("object size"); n > 0 && r.err == nil; n-- {
			r.string("object key")
			r.any(depth + 1)
		}
	case 117:
		for n := r.count("array length"); n > 0 && r.err == nil; n-- {
			r.any(depth + 1)
		}
	case 116:
		r.bytes(r.uint("binary length"), "binary value")
	default:
		if r.err == nil {
			r.pos--
			r.fail(fmt.Sprintf("unknown value tag %d", tag))
		}
	}
}

// Yjs struct and content references (yjs src/utils/encoding.js, src/structs/*).
const (
	refGC      = 0
	refDeleted = 1
	refJSON    = 2
	refBinary  = 3
	refString  = 4
	refEmbed   = 5
	refFormat  = 6
	refType    = 7
	refAny     = 8
	refDoc     = 9
	refSkip    = 10

	typeXMLElement = 3
	typeXMLHook    = 5
	typeLast       = 6 // YXmlText
)

// Validate checks that update is one complete Yjs update in format v1: client struct groups,
// each struct's item info, origins, parent and content, then the delete set, with nothing left
// over. The library that merges trusts its input; nothing reaches it that Validate refused.
func Validate(update []byte) error {
	_, err := Operations(update)
	return err
}

// maxMergeCopy bounds the bytes that merging an update's text copies. The merging library
// joins a client's consecutive text items one at a time, and each join copies the text joined
// so far: an update that types n characters as n items, each after the one before, copies
// n²/2 bytes (110,000 one-character items, a 700 KB update, would copy 6 GB). Yjs sends the
// text of one transaction as one item, so what an editor sends copies about its own size.
const maxMergeCopy = 64 << 20

// Operations validates update as Validate does and counts what it changes: its structs and its
// delete ranges. An update that changes nothing (what a sync reply with nothing to send
// holds) counts 0. An update whose text would cost more than maxMergeCopy to merge is refused.
func Operations(update []byte) (int, error) {
	ops := 0
	var copied, run uint64 // run: bytes of the text run the current item joins
	var prev itemInfo
	err := walk(update, func(client, clock uint64, first bool, it itemInfo) string {
		ops++
		switch {
		case it.text < 0:
			run = 0
		case !first && prev.text >= 0 && it.origin == (itemID{client, clock - 1, true}) && it.right == prev.right:
			run += uint64(it.text) // joins the text before it: the join copies both
			copied += run
		default:
			run = uint64(it.text)
		}
		prev = it
		if copied > maxMergeCopy {
			return fmt.Sprintf("text written in more consecutive pieces than the server merges at once (joining them would copy over %d MiB); send it as Yjs encodes it, a transaction's text in one piece", maxMergeCopy>>20)
		}
		return ""
	}, func(dsRange) { ops++ })
	if err != nil {
		return 0, err
	}
	return ops, nil
}

// walk reads a Yjs update (format v1): each struct with its client, its clock and whether it
// is the first of its client's group (item, which refuses it by answering why), then each
// range of the delete set (del), with nothing left over.
func walk(update []byte, item func(client, clock uint64, first bool, it itemInfo) string, del func(dsRange)) *MalformedError {
	r := &reader{b: update}
	for clients := r.count("number of clients"); clients > 0 && r.err == nil; clients-- {
		structs := r.count("number of structs")
		client := r.uint("client id")
		clock := r.uint("clock")
		for first := true; structs > 0 && r.err == nil; structs, first = structs-1, false {
			it := r.item()
			if r.err != nil {
				break
			}
			if why := item(client, clock, first, it); why != "" {
				r.fail(why)
			}
			clock += it.length
		}
	}
	for clients := r.count("delete set size"); clients > 0 && r.err == nil; clients-- {
		client := r.uint("delete set client")
		for n := r.count("delete ranges"); n > 0 && r.err == nil; n-- {
			clock := r.uint("delete clock")
			length := r.uint("delete length")
			if length == 0 && r.err == nil {
				r.fail("empty delete range")
			}
			if r.err == nil {
				del(dsRange{client, clock, length})
			}
		}
	}
	if r.err == nil && r.pos != len(update) {
		r.fail(fmt.Sprintf("%d bytes after the delete set", len(update)-r.pos))
	}
	return r.err
}

// itemID is an item id an item names (its origin or right origin); set is false when it names
// none.
type itemID struct {
	client, clock uint64
	set           bool
}

// itemInfo is what Operations needs of a struct: its length in clock units, the bytes of its
// text (-1 when its content is not text) and the ids it was inserted between; skip is set for a
// Skip, a gap in the clocks that holds nothing.
type itemInfo struct {
	length        uint64
	text          int
	origin, right itemID
	skip          bool
}

// item reads one struct: a GC range, a Skip or an Item with its content.
func (r *reader) item() itemInfo {
	it := itemInfo{length: 1, text: -1}
	info := r.byte("struct info")
	switch info & 0x1f {
	case refGC, refSkip:
		if it.length = r.uint("struct length"); it.length == 0 && r.err == nil {
			r.fail("empty struct")
		}
		it.skip = info&0x1f == refSkip
		return it
	}
	if info&0x80 != 0 { // origin
		it.origin = itemID{r.uint("origin client"), r.uint("origin clock"), true}
	}
	if info&0x40 != 0 { // right origin
		it.right = itemID{r.uint("right origin client"), r.uint("right origin clock"), true}
	}
	if info&0xc0 == 0 { // the parent is written only when no origin says it
		switch r.uint("parent info") {
		case 1:
			r.string("root type name")
		case 0:
			r.uint("parent client")
			r.uint("parent clock")
		default:
			r.fail("parent info is neither 0 nor 1")
		}
		if info&0x20 != 0 {
			r.string("parent key")
		}
	}
	switch ref := info & 0x1f; ref {
	case refDeleted:
		if it.length = r.uint("deleted length"); it.length == 0 && r.err == nil {
			r.fail("empty deleted content")
		}
	case refJSON:
		n := r.count("JSON content length")
		if it.length = n; n == 0 && r.err == nil {
			r.fail("empty JSON content")
		}
		for ; n > 0 && r.err == nil; n-- {
			r.json("JSON content")
		}
	case refBinary:
		r.bytes(r.uint("binary length"), "binary content")
	case refString:
		s := r.string("string content")
		if s == "" && r.err == nil {
			r.fail("empty string content")
		}
		it.text, it.length = len(s), utf16Len(s)
	case refEmbed:
		r.json("embed")
	case refFormat:
		r.string("format key")
		r.json("format value")
	case refType:
		t := r.uint("type ref")
		if r.err == nil && t > typeLast {
			r.fail(fmt.Sprintf("unknown type ref %d", t))
		}
		if t == typeXMLElement || t == typeXMLHook {
			r.string("XML node name")
		}
	case refAny:
		n := r.count("any content length")
		if it.length = n; n == 0 && r.err == nil {
			r.fail("empty any content")
		}
		for ; n > 0 && r.err == nil; n-- {
			r.any(0)
		}
	case refDoc:
		r.string("subdocument guid")
		r.any(0)
	default:
		if r.err == nil {
			r.pos--
			r.fail(fmt.Sprintf("unknown content ref %d", ref))
		}
	}
	return it
}

// utf16Len is s's length in UTF-16 code units, the clock units of Yjs text.
func utf16Len(s string) uint64 {
	n := uint64(0)
	for _, c := range s {
		n++
		if c > 0xffff {
			n++
		}
	}
	return n
}

// ValidateStateVector checks that sv is an encoded Yjs state vector: a count, then that many
// client and clock pairs, and nothing after.
func ValidateStateVector(sv []byte) error {
	r := &reader{b: sv}
	for n := r.count("state vector size"); n > 0 && r.err == nil; n-- {
		r.uint("client id")
		r.uint("clock")
	}
	if r.err == nil && r.pos != len(sv) {
		r.fail("bytes after the state vector")
	}
	if r.err != nil {
		return errors.New("not a Yjs state vector: " + r.err.Reason)
	}
	return nil
}
