package lengths

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func atoi(s string) (int, error) { return strconv.Atoi(s) }

func TestParse(t *testing.T) {
	files := map[string]string{
		"ok.txt":    "# lengths\n200\n\n400\n 600 \n",
		"bad.txt":   "200\nabc\n",
		"empty.txt": "# nothing\n",
		"big.txt":   "2000000\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tc := range []struct {
		spec  string
		kind  string
		plain bool
		err   string
	}{
		{"1000", Fixed, true, ""},
		{"fixed:200", Fixed, false, ""},
		{"uniform:50-500", Uniform, false, ""},
		{"normal:300,50", Normal, false, ""},
		{"lognormal:300,0.5", LogNormal, false, ""},
		{"file:ok.txt", File, false, ""},
		{"-5", "", false, "outside 0..1000000"},
		{"2000000", "", false, "outside"},
		{"abc", "", false, "want N, fixed:N"},
		{"poisson:3", "", false, `unknown kind "poisson"`},
		{"uniform:500-50", "", false, "MIN <= MAX"},
		{"uniform:50", "", false, `separated by "-"`},
		{"normal:300,-1", "", false, "standard deviation"},
		{"lognormal:0,1", "", false, "median"},
		{"normal:x,1", "", false, `"x" in "normal:x,1" is not a number`},
		{"file:", "", false, "names no file"},
		{"file:missing.txt", "", false, "missing.txt"},
		{"file:bad.txt", "", false, `line 2: "abc" is not a length`},
		{"file:empty.txt", "", false, "no lengths"},
		{"file:big.txt", "", false, "outside"},
		{"fixed:NaN", "", false, "not a number"},
	} {
		d, err := Parse(tc.spec, 0, 1_000_000, atoi, read)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrSpec) && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Parse(%q) = %v; want an error containing %q", tc.spec, err, tc.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tc.spec, err)
		case d.Kind != tc.kind || d.Plain() != tc.plain || d.String() != tc.spec:
			t.Errorf("Parse(%q) = kind %s plain %v spec %q; want %s, %v", tc.spec, d.Kind, d.Plain(), d.String(), tc.kind, tc.plain)
		}
	}
}

// TestDraw: draws stay within the clamp, depend only on (seed, stream,
// index), and follow the distribution's shape.
func TestDraw(t *testing.T) {
	const n = 4000
	for _, tc := range []struct {
		spec           string
		lo, hi         int // every draw within
		meanLo, meanHi float64
	}{
		{"fixed:200", 200, 200, 200, 200},
		{"uniform:50-500", 50, 500, 260, 290},
		{"normal:300,50", 0, 1000, 290, 310},
		{"normal:10,100", 1, 1000, 40, 60}, // clamped at 1: its mean rises
		{"lognormal:300,0.5", 1, 1000, 320, 360},
		{"file:f", 200, 600, 380, 420},
	} {
		d, err := Parse(tc.spec, 1, 1000, atoi, func(string) ([]byte, error) { return []byte("200\n400\n600\n"), nil })
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		draws := make([]int, n)
		for i := range n {
			v := d.Draw(7, StreamTokens, i)
			draws[i] = v
			sum += v
			if v < tc.lo || v > tc.hi {
				t.Fatalf("%s: draw %d = %d, outside %d..%d", tc.spec, i, v, tc.lo, tc.hi)
			}
		}
		if mean := float64(sum) / n; mean < tc.meanLo || mean > tc.meanHi {
			t.Errorf("%s: mean of %d draws %.1f, want %v..%v", tc.spec, n, mean, tc.meanLo, tc.meanHi)
		}
		// The same seed gives the same draws in any order; another seed
		// or stream others.
		again := make([]int, n)
		for i := n - 1; i >= 0; i-- {
			again[i] = d.Draw(7, StreamTokens, i)
		}
		if !slices.Equal(draws, again) {
			t.Errorf("%s: draws in reverse order differ", tc.spec)
		}
		if _, constant := d.Constant(); !constant {
			seed, stream := 0, 0
			for i := range 100 {
				if d.Draw(8, StreamTokens, i) != draws[i] {
					seed++
				}
				if d.Draw(7, StreamPrompt, i) != draws[i] {
					stream++
				}
			}
			if seed == 0 || stream == 0 {
				t.Errorf("%s: seed 8 differs from seed 7 in %d of 100 draws, the prompt stream from the tokens' in %d: want some", tc.spec, seed, stream)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1000", "fixed:200", "uniform:50-500", "normal:300,50", "lognormal:300,0.5", "file:x", "uniform:1k-64k", "normal:1e308,1e308"} {
		f.Add(s, "200\n400\n# c\n")
	}
	size := func(s string) (int, error) {
		if k, ok := strings.CutSuffix(s, "k"); ok {
			n, err := strconv.Atoi(k)
			return n << 10, err
		}
		return strconv.Atoi(s)
	}
	f.Fuzz(func(t *testing.T, spec, file string) {
		d, err := Parse(spec, 0, 4<<20, size, func(string) ([]byte, error) { return []byte(file), nil })
		if err != nil {
			return
		}
		for i := range 8 {
			if v := d.Draw(1, StreamPrompt, i); v < 0 || v > 4<<20 {
				t.Fatalf("Parse(%q) draws %d, outside its clamp", spec, v)
			}
		}
	})
}
