package svg

// Downsample returns pts unchanged when it has at most limit points (limit
// >= 2); otherwise it cuts pts, in order, into limit/2 runs of consecutive
// points and keeps the lowest and the highest point (by Y) of each run, in
// their original order. The result has at most limit points, keeps the
// series' global minimum and maximum, and keeps every spike visible, which
// averaging or picking every k-th point would not.
func Downsample(pts []Point, limit int) []Point {
	limit = max(limit, 2)
	if len(pts) <= limit {
		return pts
	}
	runs := limit / 2
	out := make([]Point, 0, 2*runs)
	for r := range runs {
		lo, hi := r*len(pts)/runs, (r+1)*len(pts)/runs
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if pts[i].Y < pts[iMin].Y {
				iMin = i
			}
			if pts[i].Y > pts[iMax].Y {
				iMax = i
			}
		}
		switch {
		case iMin == iMax:
			out = append(out, pts[iMin])
		case iMin < iMax:
			out = append(out, pts[iMin], pts[iMax])
		default:
			out = append(out, pts[iMax], pts[iMin])
		}
	}
	return out
}
