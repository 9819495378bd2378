// Package nsutil creates network namespaces without leaving the calling goroutine's OS
// thread inside them (vishvananda/netns switches the current thread on creation).
package nsutil

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// New creates a network namespace and returns a handle to it; name "" makes an anonymous
// one (freed when the handle is closed and no process uses it), otherwise it is bound at
// /run/netns/NAME. The caller's thread is back in its original namespace on return; if
// that switch fails the thread stays locked, so the runtime discards it.
func New(name string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return netns.None(), err
	}
	defer orig.Close()
	var ns netns.NsHandle
	if name == "" {
		ns, err = netns.New()
	} else {
		ns, err = netns.NewNamed(name)
	}
	if err != nil {
		netns.Set(orig)
		runtime.UnlockOSThread()
		return netns.None(), fmt.Errorf("create network namespace %q: %w", name, err)
	}
	if err := netns.Set(orig); err != nil {
		ns.Close()
		return netns.None(), fmt.Errorf("return from namespace %q: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ns, nil
}
