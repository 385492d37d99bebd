//go:build linux

// Command wakeprobe measures how late a thread wakes after a 1 ms timer,
// with several waiting primitives, to tell the machine's wake-up floor from
// the tool's: go run ./bench/wakeprobe
package main

import (
	"fmt"
	"runtime"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

func mono() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func report(name string, l []int64) {
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	fmt.Printf("%-28s p50=%6dns p90=%6dns p99=%6dns max=%7dns\n", name, l[len(l)/2], l[len(l)*9/10], l[len(l)*99/100], l[len(l)-1])
}

func main() {
	n := 1000
	// 1. blocking timerfd read on a locked thread
	runtime.LockOSThread()
	fd, _ := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	var l []int64
	buf := make([]byte, 8)
	for i := 0; i < n; i++ {
		d := mono() + 1e6
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d)}
		unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
		unix.Read(fd, buf)
		l = append(l, mono()-d)
	}
	report("blocking timerfd read", l)
	// 2. clock_nanosleep abstime
	l = l[:0]
	for i := 0; i < n; i++ {
		d := mono() + 1e6
		ts := unix.NsecToTimespec(d)
		unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		l = append(l, mono()-d)
	}
	report("clock_nanosleep abs", l)
	// 3. epoll_pwait on timerfd (ms timeout -1)
	ep, _ := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	fd2, _ := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd2, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd2)})
	ev := make([]unix.EpollEvent, 8)
	l = l[:0]
	for i := 0; i < n; i++ {
		d := mono() + 1e6
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d)}
		unix.TimerfdSettime(fd2, unix.TFD_TIMER_ABSTIME, &spec, nil)
		unix.EpollWait(ep, ev, -1)
		unix.Read(fd2, buf)
		l = append(l, mono()-d)
	}
	report("epoll_wait on timerfd", l)
	// 4. sleep until 50us before, then spin
	l = l[:0]
	for i := 0; i < n; i++ {
		d := mono() + 1e6
		ts := unix.NsecToTimespec(d - 50000)
		unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		for mono() < d {
		}
		l = append(l, mono()-d)
	}
	report("nanosleep-50us+spin", l)
	runtime.UnlockOSThread()
	// 5. time.Sleep
	l = l[:0]
	for i := 0; i < n; i++ {
		st := time.Now()
		time.Sleep(time.Millisecond)
		l = append(l, int64(time.Since(st)-time.Millisecond))
	}
	report("time.Sleep", l)
}
