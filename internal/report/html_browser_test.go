package report

import (
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromiumPath returns the headless browser the browser test uses:
// chromium on PATH, else /usr/bin/chromium. Without one the test skips,
// except under CI=true, where it fails: .ci/run installs chromium.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: install chromium (apt-get install chromium fonts-dejavu-core; .ci/run does)")
	}
	t.Skip("chromium not found (apt-get install chromium fonts-dejavu-core); skipping the browser test")
	return ""
}

// Thresholds of a page that really rendered: text in several greys, the
// verdict box, the charts' colours and their antialiasing give hundreds of
// colours and cover a good share of the page; a blank or error page has a
// handful.
const (
	minDistinctColours = 64
	minInkShare        = 0.03 // pixels not (near) white
)

// TestHTMLInBrowser opens the buffering report in headless Chromium, takes
// a screenshot and checks that it is not blank.
func TestHTMLInBrowser(t *testing.T) {
	bin := chromiumPath(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, simDocument(true)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1280,2000",
		"--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v (context: %v)\n%s", cmd, err, ctx.Err(), out)
	}

	img := decodePNG(t, shot, out)
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot is %dx%d, want about 1280x2000", b.Dx(), b.Dy())
	}
	colours := map[[3]uint32]bool{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				ink++
			}
		}
	}
	share := float64(ink) / float64(b.Dx()*b.Dy())
	t.Logf("screenshot %dx%d: %d distinct colours, %.1f%% non-white pixels", b.Dx(), b.Dy(), len(colours), 100*share)
	if len(colours) < minDistinctColours || share < minInkShare {
		t.Errorf("the screenshot looks blank: %d distinct colours (want >= %d), %.1f%% non-white pixels (want >= %.0f%%)",
			len(colours), minDistinctColours, 100*share, 100*minInkShare)
	}
	if dst := os.Getenv("SSE_LATENCY_SCREENSHOT"); dst != "" {
		// A way to look at the page: SSE_LATENCY_SCREENSHOT=/tmp/shot.png go test -run InBrowser
		if data, err := os.ReadFile(shot); err == nil {
			err = os.WriteFile(dst, data, 0o644)
			if err != nil {
				t.Log(err)
			}
		}
	}
}

// decodePNG reads the screenshot; out is the browser's output, for the
// failure message.
func decodePNG(t *testing.T, path string, out []byte) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("chromium wrote no screenshot at %s:\n%s", path, out)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	return img
}
