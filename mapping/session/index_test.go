package session

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestIDKeyIsStableAndPrefixed(t *testing.T) {
	tests := []struct {
		name         string
		a, b         uint64
		wantSame     bool
		wantConstant uint64
	}{
		// The state file keeps keys: they must never change between
		// builds: FNV-1a then MurmurHash3's fmix64, checked by hand.
		{name: "fixed value", a: idKey(keyRequest, "msg_01ABC"), wantConstant: 0xefa2d98feb7d9095},
		{name: "prefix joins the id", a: idKey(keyPrompt, "u1"), b: idKey("", "p:u1"), wantSame: true},
		{name: "namespaces differ", a: idKey(keyPrompt, "u1"), b: idKey(keyCompaction, "u1")},
		{name: "ids differ", a: idKey("", "toolu_1"), b: idKey("", "toolu_2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantConstant != 0 {
				if tt.a != tt.wantConstant {
					t.Fatalf("key %x, want %x", tt.a, tt.wantConstant)
				}
				return
			}
			if (tt.a == tt.b) != tt.wantSame {
				t.Errorf("keys %x and %x: same = %v, want %v", tt.a, tt.b, tt.a == tt.b, tt.wantSame)
			}
		})
	}
}

func TestKeySetAgreesWithAMap(t *testing.T) {
	for _, n := range []int{0, 1, 100, 5000, 60000} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		var s keySet
		model := map[uint64]bool{}
		for i := 0; i < n; i++ {
			k := rng.Uint64()
			if i%5 == 0 && i > 0 {
				k = uint64(i) // small, clustered keys too
			}
			if got, want := s.add(k), !model[k]; got != want {
				t.Fatalf("n=%d add(%x) = %v, want %v", n, k, got, want)
			}
			model[k] = true
		}
		for k := range model {
			if !s.has(k) || s.add(k) {
				t.Fatalf("n=%d: key %x lost", n, k)
			}
		}
		for i := 0; i < 1000; i++ {
			k := rng.Uint64()
			if s.has(k) != model[k] {
				t.Fatalf("n=%d: has(%x) = %v, want %v", n, k, s.has(k), model[k])
			}
		}
		if s.len() != len(model) || len(s.appendTo(nil)) != len(model) {
			t.Fatalf("n=%d: len %d, %d keys listed, want %d", n, s.len(), len(s.appendTo(nil)), len(model))
		}
	}
}

func TestSearchFindsEveryKeyAndNoOther(t *testing.T) {
	tests := []struct {
		name string
		keys []uint64
	}{
		{"empty", nil},
		{"one", []uint64{42}},
		{"extremes", []uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64}},
		{"skewed", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 1 << 60, math.MaxUint64}},
		{"dense", func() []uint64 {
			var out []uint64
			for i := uint64(0); i < 1000; i++ {
				out = append(out, i*3)
			}
			return out
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, k := range tt.keys {
				if got := search(tt.keys, k); got != i {
					t.Errorf("search(%d) = %d, want %d", k, got, i)
				}
				if k < math.MaxUint64 && (i+1 == len(tt.keys) || tt.keys[i+1] != k+1) {
					if got := search(tt.keys, k+1); got != -1 {
						t.Errorf("search(%d) = %d, want -1", k+1, got)
					}
				}
			}
		})
	}
}

func TestDoneIndexAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x doneIndex
	model := map[uint64]doneReq{}
	keys := []uint64{}
	for i := 0; i < 50000; i++ {
		var k uint64
		if len(keys) > 0 && i%3 == 0 {
			k = keys[rng.IntN(len(keys))] // an update
		} else {
			k = rng.Uint64()
			keys = append(keys, k)
		}
		d := doneReq{counted: Tokens{Input: rng.Int64N(1 << 20), Output: rng.Int64N(1 << 16), CacheRead: rng.Int64N(1 << 22)},
			out: rng.Int64N(1 << 16), total: rng.Int64N(1 << 24), lab: uint32(rng.IntN(100))}
		switch i % 97 {
		case 0:
			d.counted.CacheRead = 1 << 40 // does not fit 32 bits
		case 1:
			d.out = -1 // a damaged line
		}
		x.put(k, d)
		model[k] = d
	}
	for k, want := range model {
		if got, ok := x.get(k); !ok || got != want {
			t.Fatalf("get(%x) = %+v, %v; want %+v", k, got, ok, want)
		}
	}
	if _, ok := x.get(rng.Uint64()); ok {
		t.Fatal("found a key never put")
	}
	seen := map[uint64]bool{}
	x.each(func(k uint64, d doneReq) {
		if seen[k] || model[k] != d {
			t.Fatalf("each: key %x twice or with %+v, want %+v", k, d, model[k])
		}
		seen[k] = true
	})
	if len(seen) != len(model) {
		t.Fatalf("each listed %d requests, want %d", len(seen), len(model))
	}
}

// TestDoneValueKeepsEveryCount: a done request packs into 32 bits a field
// and back unchanged, web searches and the day included; one that does not fit is
// not packed (doneIndex keeps it whole).
func TestDoneValueKeepsEveryCount(t *testing.T) {
	d := doneReq{counted: Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite5m: 4, CacheWrite1h: 5, WebSearch: 6}, out: 7, total: 8, lab: 9, day: 20412}
	v, ok := packDone(d)
	if !ok || v.unpack() != d {
		t.Fatalf("packed %v (%v), unpacked %+v, want %+v", v, ok, v.unpack(), d)
	}
	// As the sorted segments pack it: small, the largest, a day
	// before 1970, one after another.
	var c doneCodec
	big := doneVal{counted: [6]uint32{math.MaxUint32, 0, math.MaxUint32, 1, 1 << 31, 127}, out: math.MaxUint32, total: 128, lab: math.MaxUint32, day: math.MinInt32}
	neg := doneVal{day: -1}
	b := c.append(c.append(c.append(nil, v), big), neg)
	for _, want := range []doneVal{v, big, neg} {
		got, n := c.read(b)
		if got != want || c.size(b) != n {
			t.Fatalf("doneCodec read %+v (%d bytes, size %d), want %+v", got, n, c.size(b), want)
		}
		b = b[n:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left after the last value", len(b))
	}
	d.counted.WebSearch = 1 << 33
	if _, ok := packDone(d); ok {
		t.Error("a count over 32 bits was packed")
	}
}

// TestIndexFilterAnswersMostAbsentKeys: the filter in front of keySet and
// doneIndex answers most lookups of absent keys by itself (at 8 to 16
// slots a key, fewer than one in eight pass it), keeps every key it was
// given across its rebuilds, and does not grow for a key put again.
func TestIndexFilterAnswersMostAbsentKeys(t *testing.T) {
	tests := []struct {
		name     string
		distinct int // keys added
		repeats  int // puts of one key more
	}{
		{"empty", 0, 0},
		{"one segment", 3000, 0},
		{"several rebuilds", 200000, 0},
		{"one key put again and again", 1, 100000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tt.distinct), 3))
			var s keySet
			var x doneIndex
			keys := make([]uint64, tt.distinct)
			for i := range keys {
				keys[i] = idKey(keyTool, fmt.Sprintf("toolu_%d_%d", i, rng.Uint64()))
				s.add(keys[i])
				x.put(keys[i], doneReq{out: int64(i)})
			}
			for range tt.repeats {
				s.add(keys[0])
				x.put(keys[0], doneReq{out: 1})
			}
			for _, f := range []*keyFilter{&s.filter, &x.filter} {
				if tt.distinct == 0 {
					if f.ready() {
						t.Fatal("a filter was made with nothing added")
					}
					continue
				}
				if slots := len(f.bits) * 64; slots < 8*tt.distinct || slots > max(16*tt.distinct, minFilterSlots) {
					t.Errorf("%d slots for %d keys, want 8 to 16 a key (at least %d)", slots, tt.distinct, minFilterSlots)
				}
				for _, k := range keys {
					if !f.mayHave(k) {
						t.Fatalf("filter lost key %x", k)
					}
				}
				passed := 0
				for i := range 20000 {
					if f.mayHave(idKey(keyTool, fmt.Sprintf("absent_%d", i))) {
						passed++
					}
				}
				if passed > 20000/8 {
					t.Errorf("%d of 20000 absent keys passed the filter, want at most an eighth", passed)
				}
			}
		})
	}
}

// TestDoneCodecSizesEveryValueAsReadDoes: size, which counts the ends of
// varints a word at a time, agrees with read on values of every length,
// packed one after another, wherever a value starts in a word and
// whether or not bytes follow it.
func TestDoneCodecSizesEveryValueAsReadDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// n bits of randomness: varints of 1 to 5 bytes.
	num := func() uint32 { return rng.Uint32() >> rng.IntN(33) }
	var c doneCodec
	var b []byte
	var sizes []int
	for range 2000 {
		v := doneVal{out: num(), total: num(), lab: num(), day: int32(num()) - int32(num())}
		for i := range v.counted {
			v.counted[i] = num()
		}
		n := len(b)
		b = c.append(b, v)
		sizes = append(sizes, len(b)-n)
	}
	at := 0
	for i, n := range sizes {
		if _, r := c.read(b[at:]); r != n {
			t.Fatalf("value %d: read %d bytes, packed %d", i, r, n)
		}
		if got := c.size(b[at:]); got != n {
			t.Fatalf("value %d at %d: size %d with bytes after it, want %d", i, at, got, n)
		}
		if got := c.size(b[at : at+n]); got != n {
			t.Fatalf("value %d at %d: size %d alone, want %d", i, at, got, n)
		}
		at += n
	}
}
