/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// The child controller process is this test binary, re-executed with these
// variables set.
const (
	childModeEnv       = "TEARDOWN_TEST_CHILD_MODE" // "hang" or "finish"
	childNamespaceEnv  = "TEARDOWN_TEST_CHILD_NAMESPACE"
	childLogEnv        = "TEARDOWN_TEST_CHILD_LOG"
	childKubeconfigEnv = "TEARDOWN_TEST_CHILD_KUBECONFIG"
	restartKey         = "restart.example.com/cleanup"
)

// runChild is a controller process whose cleanup writes "start" to a log
// file and then either hangs (to be killed mid-cleanup) or writes "done".
func runChild() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(childKubeconfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hang := os.Getenv(childModeEnv) == "hang"
	logPath := os.Getenv(childLogEnv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = runController(ctx, cfg, os.Getenv(childNamespaceEnv), func(f *finalizer.Finalizers) error {
		return f.Register(restartKey, finalizer.HandlerFunc(func(ctx context.Context, _ client.Object) finalizer.Result {
			appendLine(logPath, "start")
			if hang {
				<-ctx.Done() // killed before this returns
				return finalizer.Retry(ctx.Err())
			}
			appendLine(logPath, "done")
			return finalizer.Done()
		}), finalizer.WithAttemptTimeout(time.Hour))
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
}

func startChild(t *testing.T, ns, mode, logPath string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childNamespaceEnv+"="+ns,
		childLogEnv+"="+logPath, childKubeconfigEnv+"="+kubeconfigPath)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the controller process: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func readLog(path string) []string {
	data, _ := os.ReadFile(path)
	return strings.Fields(string(data))
}

// TestRestartMidCleanup kills a controller process in the middle of a
// cleanup and starts it again: the finalizer survives the crash, the cleanup
// runs to completion, and the finalizer is removed only after the handler
// reported done.
func TestRestartMidCleanup(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := testenv.NewNamespace(t, k8s)
	logPath := t.TempDir() + "/cleanup.log"

	first := startChild(t, ns, "hang", logPath)
	cm := guarded(t, ns, "restarted")
	testenv.Eventually(t, 30*time.Second, "the first process to add its finalizer", hasFinalizers(cm, restartKey))
	deleteObject(t, cm)
	testenv.Eventually(t, 30*time.Second, "the cleanup to start", func(context.Context) (bool, error) {
		return len(readLog(logPath)) > 0, nil
	})
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	time.Sleep(500 * time.Millisecond)
	held := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), held); err != nil {
		t.Fatalf("object gone after the controller was killed mid-cleanup: %v", err)
	}
	if got := held.Finalizers; len(got) != 1 || got[0] != restartKey {
		t.Fatalf("finalizers after the kill = %v, want [%s]", got, restartKey)
	}

	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + cm.Name, ResourceVersion: held.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	startChild(t, ns, "finish", logPath)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed before the object was deleted")
			}
			if ev.Type != watch.Deleted {
				continue
			}
			// The object is gone: its cleanup must have reported done first.
			lines := readLog(logPath)
			if len(lines) < 3 || lines[0] != "start" || lines[len(lines)-1] != "done" {
				t.Fatalf("cleanup log at deletion = %v, want start (killed), start, done", lines)
			}
			return
		case <-timeout:
			t.Fatalf("object not deleted after the restart; cleanup log %v", readLog(logPath))
		}
	}
}
