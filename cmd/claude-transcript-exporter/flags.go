package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
)

// namedValue is a kingpin.Value whose parse errors name the flag, so that
// a bad value fails at start with "--flag.name: reason".
type namedValue struct {
	name string
	set  func(string) error
	str  func() string
}

func (v *namedValue) Set(s string) error {
	if err := v.set(s); err != nil {
		return fmt.Errorf("--%s: %w", v.name, err)
	}
	return nil
}

func (v *namedValue) String() string { return v.str() }

func durationFlag(app *kingpin.Application, name, help string, p *time.Duration) {
	app.Flag(name, help).Default(showDuration(*p)).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil {
				// Days and weeks too (7d, 2w), as Prometheus writes them.
				md, merr := model.ParseDuration(s)
				if merr != nil {
					return fmt.Errorf("%q is not a duration (e.g. 10s, 5m, 7d)", s)
				}
				d = time.Duration(md)
			}
			*p = d
			return nil
		},
		str: func() string { return showDuration(*p) },
	})
}

// showDuration writes a whole number of days in days (7d, not
// Prometheus's 1w), as docs/configuration.md and --help's texts do.
func showDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return model.Duration(d).String()
}

func intFlag(app *kingpin.Application, name, help string, p *int) {
	app.Flag(name, help).Default(strconv.Itoa(*p)).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", s)
			}
			*p = n
			return nil
		},
		str: func() string { return strconv.Itoa(*p) },
	})
}

func enumFlag(app *kingpin.Application, name, help string, p *string, values ...string) {
	app.Flag(name, help).Default(*p).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if !slices.Contains(values, s) {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(values, ", "))
			}
			*p = s
			return nil
		},
		str: func() string { return *p },
	})
}

// bytesFlag takes a size: a whole number of bytes or one with a unit
// (512MiB, 1GiB; KB, MB and GB are read as powers of 1024 too).
func bytesFlag(app *kingpin.Application, name, help string, p *int64) {
	app.Flag(name, help).Default(units.Base2Bytes(*p).String()).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				*p = n
				return nil
			}
			n, err := units.ParseBase2Bytes(s)
			if err != nil {
				return fmt.Errorf("%q is not a size (e.g. 1073741824, 512MiB, 1GiB)", s)
			}
			*p = int64(n)
			return nil
		},
		str: func() string { return units.Base2Bytes(*p).String() },
	})
}

// timeFlag parses an RFC 3339 time or Unix seconds.
func timeFlag(app *kingpin.Application, name, help string, p *time.Time) {
	app.Flag(name, help).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				*p = t.UTC()
				return nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
				*p = time.UnixMilli(int64(f * 1000)).UTC()
				return nil
			}
			return fmt.Errorf("%q is neither an RFC 3339 time (2026-11-01T00:00:00Z) nor Unix seconds", s)
		},
		str: func() string {
			if p.IsZero() {
				return ""
			}
			return p.Format(time.RFC3339)
		},
	})
}

// logFlags adds promslog's --log.level and --log.format, with errors that
// name the flag and its values (promslog's own say "unrecognized log
// level verbose").
func logFlags(app *kingpin.Application, cfg *promslog.Config) {
	cfg.Level, cfg.Format = promslog.NewLevel(), promslog.NewFormat()
	app.Flag(promslogflag.LevelFlagName, promslogflag.LevelFlagHelp).Default("info").HintOptions(promslog.LevelFlagOptions...).
		SetValue(&namedValue{name: promslogflag.LevelFlagName, str: cfg.Level.String, set: func(s string) error {
			if cfg.Level.Set(s) != nil {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(promslog.LevelFlagOptions, ", "))
			}
			return nil
		}})
	app.Flag(promslogflag.FormatFlagName, promslogflag.FormatFlagHelp).Default("logfmt").HintOptions(promslog.FormatFlagOptions...).
		SetValue(&namedValue{name: promslogflag.FormatFlagName, str: cfg.Format.String, set: func(s string) error {
			if cfg.Format.Set(s) != nil {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(promslog.FormatFlagOptions, ", "))
			}
			return nil
		}})
}
