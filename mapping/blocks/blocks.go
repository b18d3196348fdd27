// Package blocks groups API usage into the 5-hour blocks that ccusage
// (`ccusage blocks`) shows and that subscription plans meter, so that the
// exporter's figures and ccusage's agree.
//
// The rule, as ccusage applies it: usage entries sorted by time; a block
// starts at its first entry's time floored to the UTC hour and lasts
// Length; an entry more than Length after the block's start (or after
// the previous entry, which that implies) starts the next block. A block
// is active while now is before its end and its last entry is less than
// Length old. Its burn rate is its tokens (all types) over the minutes
// from its first entry to its last; its projection adds that rate over
// the minutes left until its end (rounded as ccusage rounds them).
//
// A Tracker keeps usage in hour buckets (each the half-open hour (K-1h,
// K]): a block boundary never splits such a bucket, so the blocks it
// computes are exactly those of the sorted entries, in whatever order the
// entries were added. Its memory is bounded by MaxBuckets hours of
// activity: past it, the oldest finished blocks are folded into a count,
// and an entry older than the folded history (a file of old transcripts
// found later) counts as Late.
//
// The histogram of finished blocks' totals only grows: Settle observes
// each block once, with its total when it is first seen finished (the
// caller settles once the history is read, so that a block is observed
// whole; a copy read later that grows an observed block does not move
// it).
//
// The package is pure: every time is passed in.
package blocks

import (
	"math"
	"sort"
	"time"
)

// Length is the length of a block.
const Length = 5 * time.Hour

const hourMs = int64(time.Hour / time.Millisecond)

// DefaultMaxBuckets bounds a Tracker's hour buckets: 400 days of use
// every hour of the day (about 1 MB).
const DefaultMaxBuckets = 400 * 24

// Tokens are a block's tokens by type.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite5m, CacheWrite1h int64
}

// Total is the sum over all types.
func (t Tokens) Total() int64 {
	return t.Input + t.Output + t.CacheRead + t.CacheWrite5m + t.CacheWrite1h
}

// Add returns t + o.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheRead + o.CacheRead,
		t.CacheWrite5m + o.CacheWrite5m, t.CacheWrite1h + o.CacheWrite1h}
}

// Block is one block of usage.
type Block struct {
	// Start is the first entry's time floored to the UTC hour, End is
	// Start + Length.
	Start, End time.Time
	// First and Last are the times of its first and last entries.
	First, Last time.Time
	Entries     int64
	Tokens      Tokens
	CostUSD     float64
}

// Active reports whether the block is active at now, as ccusage says:
// now before its end and its last entry less than Length old.
func (b *Block) Active(now time.Time) bool {
	return now.Before(b.End) && now.Sub(b.Last) < Length
}

// BurnRate is the block's tokens (all types) per minute and cost per hour
// from its first entry to its last; ok is false when they are at the same
// instant (ccusage then shows no rate).
func (b *Block) BurnRate() (tokensPerMinute, costPerHour float64, ok bool) {
	minutes := b.Last.Sub(b.First).Minutes()
	if minutes <= 0 {
		return 0, 0, false
	}
	return float64(b.Tokens.Total()) / minutes, b.CostUSD / minutes * 60, true
}

// Projection is the block's tokens and cost at its end if it goes on at
// its burn rate for the minutes left after now, as ccusage projects: the
// minutes left rounded to a whole minute, the tokens to a whole token and
// the cost to a cent; ok as BurnRate's.
func (b *Block) Projection(now time.Time) (tokens, costUSD float64, ok bool) {
	rate, perHour, ok := b.BurnRate()
	if !ok {
		return 0, 0, false
	}
	left := math.Round(max(0, b.End.Sub(now).Minutes()))
	return math.Round(float64(b.Tokens.Total()) + rate*left), math.Round((b.CostUSD+perHour/60*left)*100) / 100, true
}

// Bucket is the usage of one hour: entries in (Hour-1h, Hour], Hour in
// hours since the Unix epoch.
type Bucket struct {
	Hour int64
	// Min and Max are the first and last entry times (Unix ms), set when
	// Entries > 0.
	Min, Max int64
	Entries  int64
	Tokens   Tokens
	CostUSD  float64
}

// Histogram is a histogram of finished blocks' total tokens: Counts per
// bound of Bounds (not cumulative), the last for +Inf.
type Histogram struct {
	Counts []uint64
	Sum    float64
	Count  uint64
}

// Tracker keeps usage by hour and computes blocks. It is not safe for
// concurrent use.
type Tracker struct {
	bounds     []float64
	maxBuckets int
	buckets    map[int64]*Bucket
	// Folded history: blocks folded and the end of the last (Unix ms; 0
	// none).
	folded      int64
	foldedUntil int64
	// hist holds the blocks observed by Settle (or folded), the last
	// of which started at observedUntil (Unix ms; 0 none).
	hist          Histogram
	observedUntil int64
	late          int64
}

// NewTracker returns a tracker whose histogram of finished blocks has
// the given upper bounds (ascending) and which keeps at most maxBuckets
// hour buckets (DefaultMaxBuckets when 0).
func NewTracker(bounds []float64, maxBuckets int) *Tracker {
	if maxBuckets <= 0 {
		maxBuckets = DefaultMaxBuckets
	}
	return &Tracker{bounds: bounds, maxBuckets: max(maxBuckets, 2), buckets: map[int64]*Bucket{},
		hist: Histogram{Counts: make([]uint64, len(bounds)+1)}}
}

// hourOf is the bucket of a time: the hour K with ms in (K-1h, K].
func hourOf(ms int64) int64 { return (ms + hourMs - 1) / hourMs }

// Add adds usage at time at: a new entry (entry true: a request, or a
// line Claude Code wrote itself) or the growth of one already added
// (entry false: its tokens are added where at falls). It returns false
// when the usage cannot be placed: at is unknown or before 1970, or older
// than the folded history (counted in Late).
func (t *Tracker) Add(at time.Time, entry bool, tok Tokens, usd float64) bool {
	if at.IsZero() || at.Unix() < 0 {
		return false
	}
	ms := at.UnixMilli()
	if t.foldedUntil != 0 && ms <= t.foldedUntil {
		t.late++
		return false
	}
	h := hourOf(ms)
	b := t.buckets[h]
	if b == nil {
		b = &Bucket{Hour: h}
		t.buckets[h] = b
	}
	if entry {
		if b.Entries == 0 || ms < b.Min {
			b.Min = ms
		}
		if b.Entries == 0 || ms > b.Max {
			b.Max = ms
		}
		b.Entries++
	}
	b.Tokens = b.Tokens.Add(tok)
	b.CostUSD += usd
	if len(t.buckets) > t.maxBuckets {
		t.fold(len(t.buckets) - t.maxBuckets*3/4)
	}
	return true
}

// Late is the number of additions older than the folded history.
func (t *Tracker) Late() int64 { return t.late }

// sortedBuckets returns the buckets by hour.
func (t *Tracker) sortedBuckets() []*Bucket {
	bs := make([]*Bucket, 0, len(t.buckets))
	for _, b := range t.buckets {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Hour < bs[j].Hour })
	return bs
}

// span is a block with the hours of its buckets.
type span struct {
	Block
	startHour int64
	hours     []int64
}

// spans computes the blocks of the buckets not folded. Hours with growth
// but no entry join the block they fall in, else the next block.
func (t *Tracker) spans() []span {
	var (
		out     []span
		carry   Tokens
		carryC  float64
		carryHs []int64
	)
	for _, b := range t.sortedBuckets() {
		cur := len(out) - 1
		if b.Entries == 0 {
			if cur >= 0 && b.Hour <= out[cur].startHour+int64(Length/time.Hour) {
				out[cur].Tokens = out[cur].Tokens.Add(b.Tokens)
				out[cur].CostUSD += b.CostUSD
				out[cur].hours = append(out[cur].hours, b.Hour)
			} else {
				carry, carryC = carry.Add(b.Tokens), carryC+b.CostUSD
				carryHs = append(carryHs, b.Hour)
			}
			continue
		}
		// A bucket (K-1h, K] lies wholly within a block starting at hour S
		// when K <= S+5; otherwise wholly after it.
		if cur < 0 || b.Hour > out[cur].startHour+int64(Length/time.Hour) || b.Min-out[cur].Last.UnixMilli() > int64(Length/time.Millisecond) {
			sh := b.Min / hourMs
			start := time.UnixMilli(sh * hourMs).UTC()
			out = append(out, span{Block: Block{Start: start, End: start.Add(Length), First: time.UnixMilli(b.Min).UTC(),
				Tokens: carry, CostUSD: carryC}, startHour: sh, hours: carryHs})
			carry, carryC, carryHs = Tokens{}, 0, nil
			cur++
		}
		s := &out[cur]
		s.Last = time.UnixMilli(b.Max).UTC()
		s.Entries += b.Entries
		s.Tokens = s.Tokens.Add(b.Tokens)
		s.CostUSD += b.CostUSD
		s.hours = append(s.hours, b.Hour)
	}
	return out
}

// Blocks returns the blocks not folded, oldest first.
func (t *Tracker) Blocks() []Block {
	sp := t.spans()
	out := make([]Block, len(sp))
	for i := range sp {
		out[i] = sp[i].Block
	}
	return out
}

// Summary is what the series show at one instant.
type Summary struct {
	// Started is the number of blocks, folded history included.
	Started int64
	// Active is the block active at now (nil when none).
	Active *Block
	// Finished is the histogram of the total tokens of the finished
	// blocks Settle observed.
	Finished Histogram
	// Blocks are the blocks not folded, oldest first.
	Blocks []Block
}

// Summary computes the blocks as they stand at now.
func (t *Tracker) Summary(now time.Time) Summary { return t.summary(t.Blocks(), now) }

// SettleAndSummarize is Settle then Summary at now (what a scrape shows),
// with the blocks computed once.
func (t *Tracker) SettleAndSummarize(now time.Time) Summary {
	bs := t.Blocks()
	t.settle(bs, now)
	return t.summary(bs, now)
}

func (t *Tracker) summary(bs []Block, now time.Time) Summary {
	s := Summary{Started: t.folded + int64(len(bs)), Finished: t.hist.clone(), Blocks: bs}
	if n := len(bs); n > 0 && bs[n-1].Active(now) {
		s.Active = &bs[n-1]
	}
	return s
}

// Active returns the block active at now, without the histogram's copy
// Summary makes.
func (t *Tracker) Active(now time.Time) (Block, bool) {
	bs := t.Blocks()
	if n := len(bs); n > 0 && bs[n-1].Active(now) {
		return bs[n-1], true
	}
	return Block{}, false
}

// Settle observes in the histogram every block finished at now (not the
// active one) that started after the last block observed.
func (t *Tracker) Settle(now time.Time) { t.settle(t.Blocks(), now) }

func (t *Tracker) settle(bs []Block, now time.Time) {
	for i := range bs {
		b := &bs[i]
		if i == len(bs)-1 && b.Active(now) {
			return
		}
		t.observe(b)
	}
}

func (t *Tracker) observe(b *Block) {
	if ms := b.Start.UnixMilli(); ms > t.observedUntil {
		t.hist.observe(t.bounds, float64(b.Tokens.Total()))
		t.observedUntil = ms
	}
}

// BlockAt returns the block whose window holds at (Start <= at <= End),
// if there is one and it is not folded.
func (t *Tracker) BlockAt(at time.Time) (Block, bool) { return Find(t.Blocks(), at) }

// Find returns the block of bs (oldest first) whose window holds at.
func Find(bs []Block, at time.Time) (Block, bool) {
	i := sort.Search(len(bs), func(i int) bool { return !bs[i].End.Before(at) })
	if i < len(bs) && !at.Before(bs[i].Start) {
		return bs[i], true
	}
	return Block{}, false
}

func (h Histogram) clone() Histogram {
	h.Counts = append([]uint64(nil), h.Counts...)
	return h
}

func (h *Histogram) observe(bounds []float64, x float64) {
	i := sort.SearchFloat64s(bounds, x) // first bound >= x
	h.Counts[i]++
	h.Sum += x
	h.Count++
}

// fold folds the oldest blocks until at least n buckets are freed; the
// last block is never folded.
func (t *Tracker) fold(n int) {
	sp := t.spans()
	for i := 0; i < len(sp)-1 && n > 0; i++ {
		s := &sp[i]
		t.folded++
		t.observe(&s.Block)
		t.foldedUntil = s.End.UnixMilli()
		for _, h := range s.hours {
			delete(t.buckets, h)
			n--
		}
	}
}
