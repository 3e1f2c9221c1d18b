//! Expression patterns: a Common Expression Language program over a tool
//! (and the caller's context), compiled once and run per tool.
//!
//! The language is the cel-rust project's (`cel` crate): parsing, macros and
//! the standard functions are its own. This module adds what a pattern needs
//! around it: limits that keep a hostile expression from exhausting the stack
//! or the time of a compile, whether the expression reads `ctx` (which makes
//! the pattern dynamic), and a verdict that is only ever a real `bool`.

use std::sync::{Arc, OnceLock};

use cel::common::ast::{EntryExpr, Expr, MapExpr, StructExpr};
use cel::{Context, Env, IdedExpr, Program, Value};

/// The longest expression source accepted, in bytes.
pub const MAX_SOURCE: usize = 100_000;
/// The deepest expression tree accepted. The evaluator recurses once per
/// level (a chain `1 + 1 + ...` is as deep as it is long), about 1.5 KiB of
/// stack each: 64 levels fit the smallest thread stacks hosts give.
pub const MAX_DEPTH: usize = 64;
/// The stack of the thread that parses: the parser recurses through some ten
/// grammar rules per bracket, and a hostile expression must be refused with
/// an error, not overflow the caller's stack.
const COMPILE_STACK: usize = 16 << 20;

/// The standard environment, built once: every evaluation's context shares it.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

/// A compiled expression pattern.
#[derive(Debug)]
pub struct Expression {
    program: Program,
    reads_ctx: bool,
}

/// Why an evaluation gave no verdict: the pattern then fails closed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The program raised an error (a missing key, a type mismatch, ...).
    Error(String),
    /// The program's value was not a bool; the type is named.
    NotBool(String),
}

impl Expression {
    /// Compiles `source`; the error is a message for the user. The parse
    /// runs on a thread with a large stack of its own (see [`COMPILE_STACK`]).
    pub fn compile(source: &str) -> Result<Self, String> {
        if source.len() > MAX_SOURCE {
            return Err(format!("the expression is {} bytes long (at most {MAX_SOURCE})", source.len()));
        }
        let source = source.to_owned();
        let parsing = std::thread::Builder::new()
            .name("toolfilter-cel".into())
            .stack_size(COMPILE_STACK)
            .spawn(move || Self::compile_here(&source))
            .map_err(|err| format!("no thread to compile the expression on ({err})"))?;
        parsing.join().unwrap_or_else(|_| Err("the expression parser failed on this expression".into()))
    }

    /// [`compile`](Self::compile) on this thread. A refused tree is dropped
    /// here too (dropping recurses as deep as the tree).
    fn compile_here(source: &str) -> Result<Self, String> {
        let program = env().compile(source).map_err(|errors| errors.to_string())?;
        let depth = depth(program.expression());
        if depth > MAX_DEPTH {
            return Err(format!("the expression nests {depth} levels deep (at most {MAX_DEPTH})"));
        }
        let reads_ctx = program.references().has_variable("ctx");
        Ok(Expression { program, reads_ctx })
    }

    /// Whether the expression reads the variable `ctx`: such a pattern is
    /// dynamic (decided per call context), the others are static.
    pub fn reads_ctx(&self) -> bool {
        self.reads_ctx
    }

    /// Runs the program with `tool` and `ctx` bound.
    pub fn evaluate(&self, tool: Value, ctx: Value) -> Result<bool, Failure> {
        let mut context = Context::with_env(Arc::clone(env()));
        context.add_variable_from_value("tool", tool);
        context.add_variable_from_value("ctx", ctx);
        match self.program.execute(&context) {
            Ok(Value::Bool(verdict)) => Ok(verdict),
            Ok(other) => Err(Failure::NotBool(format!("{:?}", other.type_of()))),
            Err(err) => Err(Failure::Error(err.to_string())),
        }
    }
}

/// The depth of an expression tree, found with a stack of its own (a tree
/// may be far deeper than the evaluator could take).
fn depth<'a>(root: &'a IdedExpr) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(root, 1usize)];
    while let Some((node, level)) = pending.pop() {
        deepest = deepest.max(level);
        let mut push = |child: &'a IdedExpr| pending.push((child, level + 1));
        match &node.expr {
            Expr::Call(call) => {
                call.target.iter().for_each(|t| push(t));
                call.args.iter().for_each(&mut push);
            }
            Expr::Comprehension(c) => {
                for child in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                    push(child);
                }
            }
            Expr::List(list) => list.elements.iter().for_each(push),
            Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
                for entry in entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(e) => {
                            push(&e.key);
                            push(&e.value);
                        }
                        EntryExpr::StructField(f) => push(&f.value),
                    }
                }
            }
            Expr::Select(select) => push(&select.operand),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn tool(name: &str, read_only: bool) -> Value {
        let annotations: HashMap<String, Value> = HashMap::from([("readOnlyHint".to_string(), Value::Bool(read_only))]);
        Value::from(HashMap::from([
            ("server_id".to_string(), Value::from("github")),
            ("name".to_string(), Value::from(name)),
            ("annotations".to_string(), Value::from(annotations)),
        ]))
    }

    fn run(source: &str, name: &str, read_only: bool, ctx: Value) -> Result<bool, Failure> {
        Expression::compile(source).expect("compiles").evaluate(tool(name, read_only), ctx)
    }

    #[test]
    fn verdicts_failures_and_ctx() {
        assert_eq!(run("tool.name.startsWith('get_')", "get_me", false, Value::Null), Ok(true));
        assert_eq!(run("tool.annotations.readOnlyHint", "x", true, Value::Null), Ok(true));
        assert_eq!(run("!tool.annotations.readOnlyHint", "x", true, Value::Null), Ok(false));
        let admin = Value::from(HashMap::from([("role".to_string(), Value::from("admin"))]));
        assert_eq!(run("ctx.role == 'admin'", "x", false, admin), Ok(true));
        assert!(matches!(run("ctx.role == 'admin'", "x", false, Value::Null), Err(Failure::Error(_))));
        assert!(matches!(run("tool.missing", "x", false, Value::Null), Err(Failure::Error(_))));
        assert_eq!(run("tool.name", "x", false, Value::Null), Err(Failure::NotBool("String".into())));
        assert!(Expression::compile("ctx.role == 'a'").unwrap().reads_ctx());
        assert!(!Expression::compile("tool.name == 'ctx'").unwrap().reads_ctx());
        assert!(Expression::compile("has(ctx.user) && tool.name == 'x'").unwrap().reads_ctx());
    }

    #[test]
    fn bad_and_hostile_sources_are_errors() {
        for bad in ["tool.name ==", "(", "tool.name.startsWith('a'", "1 +* 2", ""] {
            assert!(Expression::compile(bad).is_err(), "{bad:?}");
        }
        // The parser's own limit, or ours: an error either way, never an overflow.
        let deep = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(Expression::compile(&deep).is_err());
        let deep_list = format!("{}1{}", "[".repeat(90), "]".repeat(90));
        assert!(Expression::compile(&deep_list).is_err());
        let long_sum = vec!["1"; 5_000].join(" + ") + " > 0";
        assert!(Expression::compile(&long_sum).unwrap_err().contains("levels deep"));
        assert!(Expression::compile(&"a".repeat(MAX_SOURCE + 1)).unwrap_err().contains("bytes"));
    }

    #[test]
    fn the_deepest_tree_accepted_evaluates_on_a_small_stack() {
        // At the depth limit, left-deep; run on a 256 KiB stack, as a thread of
        // a host that shrinks its stacks would (an unoptimized build's frames
        // are far larger: it gets 4 MiB).
        let small = if cfg!(debug_assertions) { 4 << 20 } else { 256 << 10 };
        let chain = vec!["1"; MAX_DEPTH - 2].join(" + ") + " > 0 && tool.name == 'x'";
        let program = Expression::compile(&chain).expect("within the limits");
        let verdict = std::thread::Builder::new()
            .stack_size(small)
            .spawn(move || program.evaluate(tool("x", false), Value::Null))
            .expect("a thread")
            .join()
            .expect("no overflow");
        assert_eq!(verdict, Ok(true));
        let nested = format!("{}true{}", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2)) + " != []";
        let program = Expression::compile(&nested).expect("within the limits");
        let verdict = std::thread::Builder::new()
            .stack_size(small)
            .spawn(move || program.evaluate(Value::Null, Value::Null))
            .expect("a thread")
            .join()
            .expect("no overflow");
        assert_eq!(verdict, Ok(true));
    }
}
