package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/term"
)

// onTerminal runs c with stdout on a fresh pseudo-terminal (raw mode, so the
// bytes are the program's own) and stderr in a buffer; it returns both.
func onTerminal(t *testing.T, c *exec.Cmd) (stdout, stderr string, exit int) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	var errb bytes.Buffer
	c.Stdout, c.Stderr = slave, &errb
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the slave side is closed everywhere
		read <- b
	}()
	runErr := c.Run()
	slave.Close()
	out := <-read
	if ee, ok := runErr.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if runErr != nil {
		t.Fatal(runErr)
	}
	return string(out), errb.String(), exit
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// openPTY opens a pseudo-terminal pair with the slave in raw mode, so the
// bytes read from the master are the program's own. Callers close both.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatal(err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.MakeRaw(int(slave.Fd())); err != nil {
		t.Fatal(err)
	}
	return master, slave
}
