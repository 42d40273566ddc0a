// RUN: rlx-opt %s --load-pass-plugin=%S/Inputs/tiny_plugin.py --load-dialect-plugin=%S/Inputs/tiny_plugin.py -p 'tiny-tag{tag=x}' | filecheck %s
// RUN: rlx-opt %s --load-pass-plugin=%S/Inputs/tiny_plugin.py --load-dialect-plugin=%S/Inputs/tiny_plugin.py --tiny-tag=tag=y | filecheck %s --check-prefix=FLAG
// RUN: rlx-opt --load-pass-plugin=%S/Inputs/tiny_plugin.py --list-passes | filecheck %s --check-prefix=LIST
// RUN: not rlx-opt %s -p tiny-tag 2>&1 | filecheck %s --check-prefix=NOPLUGIN
// RUN: not rlx-opt %s --load-pass-plugin=%S/Inputs/no_such.py 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not rlx-opt %s --load-pass-plugin=no_such_module_xyz 2>&1 | filecheck %s --check-prefix=NOMODULE

// --load-pass-plugin / --load-dialect-plugin take a .py path or a dotted module name
// defining an xdsl.universe.Universe.

// CHECK:    builtin.module attributes {tiny.tag = "x"}
// CHECK:    tiny.nop
// FLAG:     builtin.module attributes {tiny.tag = "y"}
// LIST:     tiny-tag {{ *}}[plugin]  Set a `tiny.tag` attribute on the module.
// LIST:     tiny-tag {{ *}}tag: str = 'hello'  (the attribute's value)
// NOPLUGIN: rlx-opt: error: unknown pass 'tiny-tag'
// MISSING:  rlx-opt: error: plugin '{{.*}}no_such.py': no such file
// NOMODULE: rlx-opt: error: cannot load plugin 'no_such_module_xyz': ModuleNotFoundError
tiny.nop
