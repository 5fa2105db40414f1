/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats a command prints itself; every other -o value goes to
// cli-runtime's printers (json, yaml, name, go-template, jsonpath, ...).
const (
	outputHuman = "" // explain's and plan's tree, status's table
	outputWide  = "wide"
	outputName  = "name"
)

// outputFlags is -o and its companions (--template, --no-headers, ...),
// kubectl's PrintFlags with the command's own human formats in front.
type outputFlags struct {
	print *genericclioptions.PrintFlags
	// own are the formats the command renders itself ("" always).
	own []string
	// NoHeaders is --no-headers, for tables.
	NoHeaders bool
}

// newOutputFlags builds the flags; own lists the command's own formats
// besides the default (status: wide), and withName allows -o name.
func newOutputFlags(withName bool, own ...string) *outputFlags {
	p := genericclioptions.NewPrintFlags("")
	if !withName {
		p.NamePrintFlags = nil
	}
	return &outputFlags{print: p, own: append([]string{outputHuman}, own...)}
}

// addFlags registers -o (with the formats in its help text), the template
// flags, and --no-headers when table is true.
func (f *outputFlags) addFlags(cmd *cobra.Command, defaultHelp string, table bool) {
	f.print.JSONYamlPrintFlags.AddFlags(cmd)
	// Reports carry no managedFields.
	_ = cmd.Flags().MarkHidden("show-managed-fields")
	f.print.TemplatePrinterFlags.AddFlags(cmd)
	formats := append(slices.Clone(f.own[1:]), f.print.AllowedFormats()...)
	cmd.Flags().StringVarP(f.print.OutputFormat, flagOutput, "o", "",
		fmt.Sprintf("output format: %s (default: %s)", strings.Join(formats, ", "), defaultHelp))
	f.print.OutputFlagSpecified = func() bool { return cmd.Flag(flagOutput).Changed }
	_ = cmd.RegisterFlagCompletionFunc(flagOutput, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
	if table {
		cmd.Flags().BoolVar(&f.NoHeaders, "no-headers", false, "print the table without its header line")
	}
}

// format is the -o value ("" for the human output). A --template given
// without -o means go-template, as in kubectl.
func (f *outputFlags) format() string {
	if *f.print.OutputFormat == "" && f.print.TemplatePrinterFlags.TemplateArgument != nil && *f.print.TemplatePrinterFlags.TemplateArgument != "" {
		return "go-template"
	}
	return *f.print.OutputFormat
}

// isOwn reports whether the command renders the format itself.
func (f *outputFlags) isOwn() bool { return slices.Contains(f.own, f.format()) }

// validate checks -o and its template before any API call.
func (f *outputFlags) validate() error {
	if f.isOwn() {
		return nil
	}
	if _, err := f.print.ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			formats := append(slices.Clone(f.own[1:]), f.print.AllowedFormats()...)
			return usageErrorf("unknown output format %q: use %s, or nothing for the default", f.format(), strings.Join(formats, ", "))
		}
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

// printReport prints a report (it carries apiVersion and kind) with the
// printer -o names.
func (f *outputFlags) printReport(w io.Writer, apiVersion, kind string, report any) error {
	p, err := f.print.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(newPrintable(apiVersion, kind, report), w)
}

// printable lets cli-runtime's printers print one of the reports: they
// take a runtime.Object with apiVersion and kind, and marshal it as JSON
// (json, yaml, jsonpath and go-template alike), so the report's own JSON,
// the documented schema, is what every format sees.
type printable struct {
	gvk    schema.GroupVersionKind
	report any
}

var _ runtime.Object = &printable{}

func newPrintable(apiVersion, kind string, report any) *printable {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return &printable{gvk: gv.WithKind(kind), report: report}
}

func (p *printable) GetObjectKind() schema.ObjectKind { return p }

// DeepCopyObject returns p: printers only read it.
func (p *printable) DeepCopyObject() runtime.Object { return p }

func (p *printable) SetGroupVersionKind(gvk schema.GroupVersionKind) { p.gvk = gvk }
func (p *printable) GroupVersionKind() schema.GroupVersionKind       { return p.gvk }
func (p *printable) MarshalJSON() ([]byte, error)                    { return json.Marshal(p.report) }

// namePrinter prints kubectl's -o name (kind.group/name) of each row.
func (f *outputFlags) namePrinter() (printers.ResourcePrinter, error) {
	return f.print.ToPrinter()
}
