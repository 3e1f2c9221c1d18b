//! Expression patterns: a Common Expression Language program over a tool
//! (and the caller's context), compiled once and run per tool.
//!
//! The language is the cel-rust project's (`cel` crate): parsing, macros and
//! the standard functions are its own, but for `matches()`, which runs with
//! RE2's meaning (`rust/re2.rs`), as CEL specifies. This module adds what a
//! pattern needs around it: limits that keep a hostile expression from
//! exhausting the stack or the time of a compile, a cost budget (estimated at
//! compile time, counted as it runs), whether the expression reads `ctx`
//! (which makes the pattern dynamic), and a verdict that is only ever a real
//! `bool`.
//!
//! # Cost
//!
//! The cost unit is one run of a comprehension's body: one element visited
//! by `all`, `exists`, `exists_one`, `map` or `filter`. Everything else runs
//! at most once per node, and the tree is bounded by [`MAX_SOURCE`] and
//! [`MAX_DEPTH`]. The *estimate* is the most runs the expression can make: a
//! comprehension over a list or map literal runs once per element, over
//! anything else (a list from `tool` or `ctx`, the result of another macro)
//! [`ASSUMED_SIZE`] times; a comprehension inside another's body runs that
//! many times per run of the outer one, so nested comprehensions multiply.
//! An expression whose estimate passes its budget (`max_cost`) is refused.
//! As it runs, every body run is counted; the run that would pass the budget
//! stops the evaluation, which then gives no verdict (it fails closed),
//! whatever the rest of the expression would have made of the error.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue, MapExpr, StructExpr};
use cel::common::types::{CelBool, CelBytes, CelDouble, CelInt, CelNull, CelString, CelUInt, DYN_TYPE};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Env, ExecutionError, IdedExpr, Value};

/// The longest expression source accepted, in bytes.
pub const MAX_SOURCE: usize = 100_000;
/// The deepest expression tree accepted. The evaluator recurses once per
/// level (a chain `1 + 1 + ...` is as deep as it is long), about 1.5 KiB of
/// stack each: 64 levels fit the smallest thread stacks hosts give.
pub const MAX_DEPTH: usize = 64;
/// The budget of an expression that names none: comprehension body runs per
/// evaluation (about a tenth of a second of work).
pub const DEFAULT_MAX_COST: u64 = 100_000;
/// How many elements the estimate assumes a list or map that is not a
/// literal of the expression holds.
pub const ASSUMED_SIZE: u64 = 100;
/// The stack of the thread that parses: the parser recurses through some ten
/// grammar rules per bracket, and a hostile expression must be refused with
/// an error, not overflow the caller's stack.
const COMPILE_STACK: usize = 16 << 20;
/// The function that counts one body run and passes its argument through.
/// CEL source cannot name it (`@` starts no identifier).
const STEP: &str = "@cost_step";

thread_local! {
    /// This thread's running evaluation: body runs counted, and its budget.
    static SPENT: Cell<(u64, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Counts one body run; an error once the budget is spent.
fn cost_step<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let spent = SPENT.with(|cell| {
        let (spent, limit) = cell.get();
        let spent = spent.saturating_add(1);
        cell.set((spent, limit));
        spent > limit
    });
    if spent {
        return Err(ExecutionError::function_error("cost", "the budget is spent"));
    }
    if args.is_empty() {
        return Err(ExecutionError::function_error("cost", "no argument"));
    }
    Ok(args.swap_remove(0))
}

/// CEL's `matches`, with RE2's meaning.
fn matches(this: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    crate::re2::is_match(this.inner(), pattern.inner())
        .map(CelBool::from)
        .map_err(|why| ExecutionError::function_error("matches", why))
}

/// The standard environment, built once: every evaluation's context shares it.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        env.add_overload(STEP, "cost_step", vec![DYN_TYPE], cost_step).expect("a new function");
        cel::add_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>, id = "matches")
            .expect("a new function");
        cel::add_member_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>)
            .expect("a new function");
        Arc::new(env)
    })
}

/// A compiled expression pattern.
#[derive(Debug, Clone)]
pub struct Expression {
    /// The program's tree, with the cost step around every comprehension body.
    tree: IdedExpr,
    reads_ctx: bool,
    max_cost: u64,
    estimate: u64,
    /// What the program reads of `tool`, and of `ctx`.
    tool_reads: Reads,
    ctx_reads: Reads,
}

/// What an expression reads of a variable: nothing, the whole value, or
/// some fields of it (a map's entries by key), each read so. A value built
/// with only what its reads name gives every verdict and error the whole
/// value gives: the expression looks nowhere else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Reads {
    /// The value is never read.
    #[default]
    Nothing,
    /// The value is read as a whole (compared, passed to a function, looped
    /// over, indexed, ...).
    Whole,
    /// Only these fields are selected (`v.field`), each read as it says.
    Fields(BTreeMap<String, Reads>),
}

impl Reads {
    /// What is read of the field `name` of the value read so.
    pub fn field(&self, name: &str) -> &Reads {
        match self {
            Reads::Nothing => &Reads::Nothing,
            Reads::Whole => &Reads::Whole,
            Reads::Fields(fields) => fields.get(name).unwrap_or(&Reads::Nothing),
        }
    }

    /// Marks the value at `path` (fields from here) as read whole.
    fn add(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Reads::Whole;
            return;
        };
        match self {
            Reads::Whole => {}
            Reads::Nothing => {
                let mut below = Reads::Nothing;
                below.add(rest);
                *self = Reads::Fields(BTreeMap::from([((*first).to_owned(), below)]));
            }
            Reads::Fields(fields) => fields.entry((*first).to_owned()).or_default().add(rest),
        }
    }

    /// Adds what `other` reads.
    pub fn union(&mut self, other: &Reads) {
        match (&mut *self, other) {
            (_, Reads::Nothing) | (Reads::Whole, _) => {}
            (Reads::Nothing, _) | (_, Reads::Whole) => *self = other.clone(),
            (Reads::Fields(mine), Reads::Fields(theirs)) => {
                for (name, reads) in theirs {
                    mine.entry(name.clone()).or_default().union(reads);
                }
            }
        }
    }

    /// Whether a value built for these reads holds all that `other` reads.
    pub fn covers(&self, other: &Reads) -> bool {
        match (self, other) {
            (_, Reads::Nothing) | (Reads::Whole, _) => true,
            (Reads::Nothing, _) | (Reads::Fields(_), Reads::Whole) => false,
            (Reads::Fields(mine), Reads::Fields(theirs)) => {
                theirs.iter().all(|(name, reads)| mine.get(name).is_some_and(|m| m.covers(reads)))
            }
        }
    }
}

/// Why an evaluation gave no verdict: the pattern then fails closed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The program raised an error (a missing key, a type mismatch, ...).
    Error(String),
    /// The program's value was not a bool; the type is named.
    NotBool(String),
    /// The program's comprehensions ran more than this budget allows.
    Budget(u64),
}

impl Expression {
    /// Compiles `source` with the default budget ([`DEFAULT_MAX_COST`]).
    pub fn compile(source: &str) -> Result<Self, String> {
        Self::compile_with_budget(source, DEFAULT_MAX_COST)
    }

    /// Compiles `source`, refused when its cost estimate passes `max_cost`;
    /// the error is a message for the user, on one line. The parse runs on a
    /// thread with a large stack of its own (see [`COMPILE_STACK`]).
    pub fn compile_with_budget(source: &str, max_cost: u64) -> Result<Self, String> {
        if source.len() > MAX_SOURCE {
            return Err(format!("the expression is {} bytes long (at most {MAX_SOURCE})", source.len()));
        }
        let source = source.to_owned();
        let parsing = std::thread::Builder::new()
            .name("toolfilter-cel".into())
            .stack_size(COMPILE_STACK)
            .spawn(move || Self::compile_here(&source, max_cost))
            .map_err(|err| format!("no thread to compile the expression on ({err})"))?;
        parsing.join().unwrap_or_else(|_| Err("the expression parser failed on this expression".into()))
    }

    /// [`compile`](Self::compile) on this thread. A refused tree is dropped
    /// here too (dropping recurses as deep as the tree).
    fn compile_here(source: &str, max_cost: u64) -> Result<Self, String> {
        let program = env().compile(source).map_err(|errors| parse_message(&errors))?;
        let depth = depth(program.expression());
        if depth > MAX_DEPTH {
            return Err(format!("the expression nests {depth} levels deep (at most {MAX_DEPTH})"));
        }
        check_literal_patterns(program.expression())?;
        let estimate = estimate(program.expression());
        if estimate > max_cost {
            return Err(format!(
                "the expression's loops may run {estimate} times, over its cost budget of {max_cost} \
                 (max_cost; a comprehension over a list that is not a literal counts {ASSUMED_SIZE} elements)"
            ));
        }
        // `.ctx` is the same variable named from the root scope; the parser
        // keeps the dot in the name, so both spellings count.
        let references = program.references();
        let reads_ctx = references.has_variable("ctx") || references.has_variable(".ctx");
        let (tool_reads, ctx_reads) = variable_reads(program.expression());
        let mut tree = program.expression().clone();
        instrument(&mut tree);
        direct_selections(&mut tree);
        Ok(Expression { tree, reads_ctx, max_cost, estimate, tool_reads, ctx_reads })
    }

    /// What the program reads of `tool`.
    pub fn tool_reads(&self) -> &Reads {
        &self.tool_reads
    }

    /// What the program reads of `ctx`.
    pub fn ctx_reads(&self) -> &Reads {
        &self.ctx_reads
    }

    /// Whether the expression reads the variable `ctx`: such a pattern is
    /// dynamic (decided per call context), the others are static.
    pub fn reads_ctx(&self) -> bool {
        self.reads_ctx
    }

    /// The budget: comprehension body runs per evaluation.
    pub fn max_cost(&self) -> u64 {
        self.max_cost
    }

    /// The compile-time estimate of the body runs (at most the budget).
    pub fn estimate(&self) -> u64 {
        self.estimate
    }

    /// The program as it runs under `ctx`: each largest part that reads
    /// `ctx` and nothing else (no `tool`, no loop) is evaluated once, here,
    /// and stands as its value when that is a bool, number, text, bytes or
    /// null (a part that fails, or gives a list, a map or a type, stays as
    /// it is, to fail or give it again per tool). Every verdict, error and
    /// cost is the program's own: such a part has no loop, so it costs
    /// nothing, and gives the same value every time.
    pub fn under(&self, ctx: &SharedValue) -> Expression {
        let mut program = self.clone();
        if self.reads_ctx {
            let lender = Lender { tool: &CelNull, ctx: &*ctx.0 };
            let mut context = Context::with_env(Arc::clone(env()));
            context.set_variable_resolver(&lender);
            if fold_ctx_only(&mut program.tree, &context) == Purity::CtxOnly {
                fold_into_literal(&mut program.tree, &context);
            }
        }
        program
    }

    /// Runs the program with `tool` and `ctx` bound.
    pub fn evaluate(&self, tool: Value, ctx: Value) -> Result<bool, Failure> {
        self.evaluate_shared(tool, &SharedValue::new(ctx).map_err(Failure::Error)?)
    }

    /// Runs the program with `tool` bound and `ctx` lent: a call converts its
    /// context once, for all the tools it judges.
    pub fn evaluate_shared(&self, tool: Value, ctx: &SharedValue) -> Result<bool, Failure> {
        self.evaluate_vals(SharedValue::new(tool).map_err(Failure::Error)?.0, ctx)
    }

    /// [`evaluate_shared`](Self::evaluate_shared) with `tool` already in the
    /// evaluator's form (the binding builds it so, with no `Value` between).
    pub fn evaluate_vals(&self, tool: Box<dyn Val>, ctx: &SharedValue) -> Result<bool, Failure> {
        let lender = Lender { tool: &*tool, ctx: &*ctx.0 };
        let mut context = Context::with_env(Arc::clone(env()));
        context.set_variable_resolver(&lender);
        let before = SPENT.with(|cell| cell.replace((0, self.max_cost)));
        let result = Value::resolve(&self.tree, &context);
        let (spent, _) = SPENT.with(|cell| cell.replace(before));
        if spent > self.max_cost {
            return Err(Failure::Budget(self.max_cost));
        }
        match result {
            Ok(Value::Bool(verdict)) => Ok(verdict),
            Ok(other) => Err(Failure::NotBool(format!("{:?}", other.type_of()))),
            Err(err) => Err(Failure::Error(one_line(&err.to_string()))),
        }
    }
}

/// A value in the evaluator's own form, made once and lent to every
/// evaluation that reads it (the call's `ctx`).
#[derive(Debug)]
pub struct SharedValue(Box<dyn Val>);

impl SharedValue {
    /// `value` in the evaluator's form.
    pub fn new(value: Value) -> Result<Self, String> {
        Box::<dyn Val>::try_from(value).map(SharedValue).map_err(|err| one_line(&err.to_string()))
    }

    /// A value built in the evaluator's form already.
    pub fn from_val(value: Box<dyn Val>) -> Self {
        SharedValue(value)
    }
}

/// Lends `tool` and `ctx` to one evaluation, by reference.
struct Lender<'a> {
    tool: &'a dyn Val,
    ctx: &'a dyn Val,
}

impl VariableResolver for Lender<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable {
            "tool" => Some(CowVal::Borrowed(self.tool)),
            "ctx" => Some(CowVal::Borrowed(self.ctx)),
            _ => None,
        }
    }
}

/// What the tree reads of `tool` and of `ctx` (see [`Reads`]), found with a
/// stack of its own. A chain of selections down to the variable's name
/// (`tool.name`, `.ctx.claims.role`, `has(tool.meta.k)`) reads the field it
/// ends at; the name anywhere else reads it whole. A comprehension variable
/// of the same name only makes the reads larger than they need be.
fn variable_reads(root: &IdedExpr) -> (Reads, Reads) {
    let (mut tool, mut ctx) = (Reads::Nothing, Reads::Nothing);
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        let mut path = Vec::new();
        let mut at = node;
        while let Expr::Select(select) = &at.expr {
            path.push(select.field.as_str());
            at = &select.operand;
        }
        path.reverse();
        match &at.expr {
            Expr::Ident(name) => match name.strip_prefix('.').unwrap_or(name) {
                "tool" => tool.add(&path),
                "ctx" => ctx.add(&path),
                _ => {}
            },
            _ => children(at, |child| pending.push(child)),
        }
    }
    (tool, ctx)
}

/// The parser's errors on one line: each as `line:column: what`, joined by
/// `; ` (its own display quotes the source with a caret under it, on lines
/// of their own, and a message must fit on the one line an error gets).
fn parse_message(errors: &cel::ParseErrors) -> String {
    let each = errors.errors.iter().map(|e| format!("{}:{}: {}", e.pos.0, e.pos.1, one_line(&e.msg)));
    each.collect::<Vec<_>>().join("; ")
}

/// `message` with its line breaks (and the space around them) as single spaces.
pub fn one_line(message: &str) -> String {
    message.split(['\n', '\r']).map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Refuses a `matches()` whose pattern is a literal that RE2 (as run here)
/// would refuse: the error comes with the compile, not with every tool.
fn check_literal_patterns(root: &IdedExpr) -> Result<(), String> {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Expr::Call(call) = &node.expr {
            let pattern = if call.target.is_some() { call.args.first() } else { call.args.get(1) };
            if let (true, Some(Expr::Literal(LiteralValue::String(text)))) =
                (call.func_name == "matches", pattern.map(|p| &p.expr))
            {
                crate::re2::compile(text.inner()).map_err(|why| format!("matches: {why}"))?;
            }
        }
        children(node, |child| pending.push(child));
    }
    Ok(())
}

/// How many elements a comprehension's range has, as the estimate counts.
fn range_size(range: &IdedExpr) -> u64 {
    match &range.expr {
        Expr::List(list) => list.elements.len() as u64,
        Expr::Map(map) => map.entries.len() as u64,
        _ => ASSUMED_SIZE,
    }
}

/// The most comprehension body runs the tree can make (see the module's
/// notes), found with a stack of its own.
fn estimate(root: &IdedExpr) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![(root, 1u64)];
    while let Some((node, runs)) = pending.pop() {
        if let Expr::Comprehension(c) = &node.expr {
            let body = runs.saturating_mul(range_size(&c.iter_range));
            total = total.saturating_add(body);
            pending.extend([(&c.iter_range, runs), (&c.accu_init, runs), (&c.result, runs)]);
            pending.extend([(&c.loop_cond, body), (&c.loop_step, body)]);
        } else {
            children(node, |child| pending.push((child, runs)));
        }
    }
    total
}

/// Puts the cost step around every comprehension's per-element work: the
/// loop condition, or, for the `map`/`filter` shape the evaluator builds in
/// place (constant condition, step `@result + [x]`, maybe guarded), the
/// guard or the appended element, so that the shape stays recognised.
fn instrument(root: &mut IdedExpr) {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Expr::Comprehension(c) = &mut node.expr {
            wrap(per_element(c));
        }
        children_mut(node, |child| pending.push(child));
    }
}

/// The node of a comprehension that runs once per element.
fn per_element(c: &mut ComprehensionExpr) -> &mut IdedExpr {
    let accu = c.accu_var.clone();
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if *name == accu);
    let appends = |e: &IdedExpr| match &e.expr {
        Expr::Call(call) if call.func_name == "_+_" && call.target.is_none() => match call.args.as_slice() {
            [lhs, rhs] => is_accu(lhs) && matches!(&rhs.expr, Expr::List(list) if !list.elements.is_empty()),
            _ => false,
        },
        _ => false,
    };
    let in_place = matches!(c.loop_cond.expr, Expr::Literal(_)) && is_accu(&c.result);
    let guarded = in_place
        && matches!(&c.loop_step.expr, Expr::Call(call) if call.func_name == "_?_:_" && call.target.is_none()
            && matches!(call.args.as_slice(), [_, step, otherwise] if appends(step) && is_accu(otherwise)));
    let unguarded = in_place && appends(&c.loop_step);
    if guarded {
        if let Expr::Call(call) = &mut c.loop_step.expr {
            return &mut call.args[0];
        }
    } else if unguarded {
        if let Expr::Call(call) = &mut c.loop_step.expr {
            if let Expr::List(list) = &mut call.args[1].expr {
                return &mut list.elements[0];
            }
        }
    }
    &mut c.loop_cond
}

/// Puts each chain of field selections from `tool` or `ctx` (`ctx.claims.role`)
/// on the variable itself, as `(true ? ctx : null).claims.role`: the
/// evaluator then reads the variable and selects the fields, the value and
/// the errors the chain has, instead of first looking for variables and
/// types named `ctx.claims.role` and `ctx.claims` (there are none: the only
/// variables are `tool`, `ctx` and a comprehension's, which are plain names,
/// and no type is named from either), which cost an evaluation most of its
/// time.
fn direct_selections(root: &mut IdedExpr) {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Expr::Select(_) = &node.expr {
            let at = chain_root(node);
            if matches!(&at.expr, Expr::Ident(name) if name == "tool" || name == "ctx") {
                let id = at.id;
                let variable = std::mem::take(at);
                let literal = |value| IdedExpr { id, expr: Expr::Literal(value) };
                at.expr = Expr::Call(CallExpr {
                    func_name: cel::common::ast::operators::CONDITIONAL.to_owned(),
                    target: None,
                    args: vec![literal(LiteralValue::Boolean(true.into())), variable, literal(LiteralValue::Null)],
                });
            } else {
                children_mut(at, |child| pending.push(child));
            }
            continue;
        }
        children_mut(node, |child| pending.push(child));
    }
}

/// What a subtree reads, for [`Expression::under`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purity {
    /// Nothing: literals only.
    Constant,
    /// `ctx`, and nothing else.
    CtxOnly,
    /// Anything else: `tool`, a loop's variable, a loop, a type's name.
    Other,
}

/// Folds the largest parts below `node` that read only `ctx` (see
/// [`Expression::under`]) and says what `node` reads. Recurses as deep as
/// the tree, which the compile bounds ([`MAX_DEPTH`]).
fn fold_ctx_only(node: &mut IdedExpr, context: &Context) -> Purity {
    let own = match &node.expr {
        Expr::Literal(_) => return Purity::Constant,
        Expr::Ident(name) => return if name == "ctx" { Purity::CtxOnly } else { Purity::Other },
        Expr::Comprehension(_) | Expr::Struct(_) | Expr::Unspecified => Purity::Other,
        Expr::Call(call) if call.func_name == STEP => Purity::Other,
        _ => Purity::Constant,
    };
    // A loop whose variable is named `ctx`: inside its body, `ctx` is that
    // variable (its range and start are read outside, and come first).
    let shadows = matches!(&node.expr, Expr::Comprehension(c)
        if c.iter_var == "ctx" || c.accu_var == "ctx" || c.iter_var2.as_deref() == Some("ctx"));
    let mut parts: Vec<(&mut IdedExpr, Purity)> = Vec::new();
    children_mut(node, |child| parts.push((child, Purity::Constant)));
    let mut purity = own;
    for (i, (child, seen)) in parts.iter_mut().enumerate() {
        *seen = if shadows && i >= 2 { Purity::Other } else { fold_ctx_only(child, context) };
        purity = match (purity, *seen) {
            (Purity::Other, _) | (_, Purity::Other) => Purity::Other,
            (Purity::CtxOnly, _) | (_, Purity::CtxOnly) => Purity::CtxOnly,
            _ => Purity::Constant,
        };
    }
    if purity == Purity::Other {
        for (child, seen) in parts {
            if seen == Purity::CtxOnly {
                fold_into_literal(child, context);
            }
        }
    }
    purity
}

/// `node` becomes the literal of its value under `context`, when it has one.
fn fold_into_literal(node: &mut IdedExpr, context: &Context) {
    let literal = {
        let Ok(value) = Value::resolve_val(node, context) else { return };
        if let Some(value) = value.downcast_ref::<CelBool>() {
            LiteralValue::Boolean(CelBool::from(*value.inner()))
        } else if let Some(value) = value.downcast_ref::<CelInt>() {
            LiteralValue::Int(CelInt::from(*value.inner()))
        } else if let Some(value) = value.downcast_ref::<CelUInt>() {
            LiteralValue::UInt(CelUInt::from(*value.inner()))
        } else if let Some(value) = value.downcast_ref::<CelDouble>() {
            LiteralValue::Double(CelDouble::from(*value.inner()))
        } else if let Some(value) = value.downcast_ref::<CelString>() {
            LiteralValue::String(CelString::from(value.inner().to_owned()))
        } else if let Some(value) = value.downcast_ref::<CelBytes>() {
            LiteralValue::Bytes(CelBytes::from(value.inner().to_vec()))
        } else if value.downcast_ref::<CelNull>().is_some() {
            LiteralValue::Null
        } else {
            return;
        }
    };
    node.expr = Expr::Literal(literal);
}

/// The operand at the bottom of a chain of field selections.
fn chain_root(mut at: &mut IdedExpr) -> &mut IdedExpr {
    loop {
        match at.expr {
            Expr::Select(ref mut select) => at = &mut select.operand,
            _ => return at,
        }
    }
}

/// `node` becomes `@cost_step(node)`.
fn wrap(node: &mut IdedExpr) {
    let inner = std::mem::take(node);
    *node = IdedExpr {
        id: inner.id,
        expr: Expr::Call(CallExpr { func_name: STEP.to_owned(), target: None, args: vec![inner] }),
    };
}

/// Calls `visit` on each child of `node` (a comprehension's five parts too).
fn children<'a>(node: &'a IdedExpr, mut visit: impl FnMut(&'a IdedExpr)) {
    match &node.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                visit(target);
            }
            call.args.iter().for_each(visit);
        }
        Expr::Comprehension(c) => {
            for child in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                visit(child);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(visit),
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
            for entry in entries {
                match &entry.expr {
                    EntryExpr::MapEntry(e) => {
                        visit(&e.key);
                        visit(&e.value);
                    }
                    EntryExpr::StructField(f) => visit(&f.value),
                }
            }
        }
        Expr::Select(select) => visit(&select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// [`children`], mutably.
fn children_mut<'a>(node: &'a mut IdedExpr, mut visit: impl FnMut(&'a mut IdedExpr)) {
    match &mut node.expr {
        Expr::Call(call) => {
            if let Some(target) = &mut call.target {
                visit(target);
            }
            call.args.iter_mut().for_each(visit);
        }
        Expr::Comprehension(c) => {
            let c = &mut **c;
            for child in [&mut c.iter_range, &mut c.accu_init, &mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                visit(child);
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(visit),
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
            for entry in entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(e) => {
                        visit(&mut e.key);
                        visit(&mut e.value);
                    }
                    EntryExpr::StructField(f) => visit(&mut f.value),
                }
            }
        }
        Expr::Select(select) => visit(&mut select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The depth of an expression tree, found with a stack of its own (a tree
/// may be far deeper than the evaluator could take).
fn depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(root, 1usize)];
    while let Some((node, level)) = pending.pop() {
        deepest = deepest.max(level);
        children(node, |child| pending.push((child, level + 1)));
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
        assert!(Expression::compile(".ctx != null && .ctx.role != 'admin'").unwrap().reads_ctx());
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

    /// The hostile expression of the issue: four nested `exists` over a
    /// 200-element list (some 1.7 KB), 1.6 billion body runs.
    fn four_nested_exists(list: &str) -> String {
        format!("{list}.exists(a, {list}.exists(b, {list}.exists(c, {list}.exists(d, a + b + c + d < 0))))")
    }

    fn ctx_list(n: i64) -> Value {
        Value::from(HashMap::from([("l".to_string(), Value::List(Arc::new((0..n).map(Value::Int).collect())))]))
    }

    #[test]
    fn the_cost_estimate_refuses_nested_loops_at_compile_time() {
        let list = format!("[{}]", vec!["1"; 200].join(","));
        let hostile = four_nested_exists(&list);
        assert!(hostile.len() > 1_600, "{}", hostile.len());
        let why = Expression::compile(&hostile).unwrap_err();
        assert!(why.contains("cost budget of 100000"), "{why}");
        assert!(why.contains("1608040200"), "{why}"); // 200 + 200^2 + 200^3 + 200^4
        // Over data of unknown size: 100 assumed per level.
        let why = Expression::compile(&four_nested_exists("ctx.l")).unwrap_err();
        assert!(why.contains("101010100"), "{why}");
        // Literal sizes count exactly; a budget may be raised or lowered.
        assert_eq!(Expression::compile("[1, 2, 3].exists(x, [4, 5].exists(y, x == y))").unwrap().estimate(), 3 + 6);
        assert_eq!(Expression::compile("ctx.l.all(x, x > 0)").unwrap().estimate(), ASSUMED_SIZE);
        assert_eq!(Expression::compile("ctx.l.map(x, x + 1).exists(y, y == 2)").unwrap().estimate(), 2 * ASSUMED_SIZE);
        assert!(Expression::compile_with_budget("ctx.l.all(x, x > 0)", 99).is_err());
        assert!(Expression::compile_with_budget(&four_nested_exists(&list), 2_000_000_000).is_ok());
        // A comprehension in a range or a result runs once, not per element.
        assert_eq!(Expression::compile("[1, 2].map(x, x).size() == [1].filter(y, y > 0).size()").unwrap().estimate(), 3);
    }

    #[test]
    fn the_runtime_budget_stops_a_run_and_fails_closed() {
        let two_deep = "ctx.l.exists(a, ctx.l.exists(b, a + b < 0))";
        let program = Expression::compile(two_deep).expect("the estimate is 10,100");
        assert_eq!(program.evaluate(Value::Null, ctx_list(50)), Ok(false)); // 2,550 runs
        // 1,000 elements: a million runs; stopped at the 100,001st.
        assert_eq!(program.evaluate(Value::Null, ctx_list(1_000)), Err(Failure::Budget(DEFAULT_MAX_COST)));
        // An error CEL's logic would absorb still fails the run.
        let absorbed = Expression::compile(&format!("{two_deep} || true")).unwrap();
        assert_eq!(absorbed.evaluate(Value::Null, ctx_list(1_000)), Err(Failure::Budget(DEFAULT_MAX_COST)));
        assert_eq!(absorbed.evaluate(Value::Null, ctx_list(10)), Ok(true));
        // The count is exact: a budget of n allows n runs, not n + 1.
        let one = Expression::compile_with_budget("ctx.l.all(x, x >= 0)", 100).unwrap();
        assert_eq!(one.evaluate(Value::Null, ctx_list(100)), Ok(true));
        assert_eq!(one.evaluate(Value::Null, ctx_list(101)), Err(Failure::Budget(100)));
        // map and filter are counted too (in the shape built in place).
        for source in ["ctx.l.map(x, x * 2).size() > 0", "ctx.l.filter(x, x > 5).size() > 0",
                       "ctx.l.map(x, x > 5, x).size() > 0", "ctx.l.exists_one(x, x == 3)"] {
            let program = Expression::compile_with_budget(source, 100).unwrap();
            assert_eq!(program.evaluate(Value::Null, ctx_list(100)), Ok(true), "{source}");
            assert_eq!(program.evaluate(Value::Null, ctx_list(101)), Err(Failure::Budget(100)), "{source}");
        }
        // Each evaluation has a budget of its own.
        assert_eq!(program.evaluate(Value::Null, ctx_list(50)), Ok(false));
    }

    #[test]
    fn a_shared_ctx_gives_the_verdicts_of_a_converted_one() {
        let program = Expression::compile("ctx.role == 'admin' && tool.name.startsWith('get_')").unwrap();
        let admin = Value::from(HashMap::from([("role".to_string(), Value::from("admin"))]));
        let shared = SharedValue::new(admin.clone()).unwrap();
        for name in ["get_me", "delete_me"] {
            assert_eq!(program.evaluate_shared(tool(name, false), &shared), program.evaluate(tool(name, false), admin.clone()));
        }
        assert_eq!(program.evaluate_shared(tool("get_me", false), &shared), Ok(true));
    }

    fn fields(pairs: &[(&str, Reads)]) -> Reads {
        Reads::Fields(pairs.iter().map(|(name, reads)| ((*name).to_owned(), reads.clone())).collect())
    }

    #[test]
    fn the_reads_of_tool_and_ctx() {
        let reads = |source: &str| {
            let program = Expression::compile(source).expect("compiles");
            (program.tool_reads().clone(), program.ctx_reads().clone())
        };
        let rule = reads("ctx.claims.role == 'admin' || tool.name.startsWith('get_')");
        assert_eq!(rule.0, fields(&[("name", Reads::Whole)]));
        assert_eq!(rule.1, fields(&[("claims", fields(&[("role", Reads::Whole)]))]));
        assert_eq!(reads("true"), (Reads::Nothing, Reads::Nothing));
        // Whole reads: compared, sized, looped over, indexed, passed on.
        for source in ["tool == {}", "size(tool) > 0", "tool.all(k, k != '')", "tool['name'] == 'x'",
                       "'name' in tool", "[tool][0].name == 'x'", ".tool != null"] {
            assert_eq!(reads(source).0, Reads::Whole, "{source}");
        }
        // A whole read of a field swallows the reads below it, in either order.
        let meta = fields(&[("meta", Reads::Whole)]);
        assert_eq!(reads("tool.meta.a == 1 && size(tool.meta) > 0").0, meta);
        assert_eq!(reads("size(tool.meta) > 0 && tool.meta.a == 1").0, meta);
        // has() reads the field it tests; the root-scope spelling counts.
        assert_eq!(reads("has(tool.meta.k)").0, fields(&[("meta", fields(&[("k", Reads::Whole)]))]));
        assert_eq!(reads(".ctx.role == 'a'").1, fields(&[("role", Reads::Whole)]));
        // A selection from something else still has its operand visited.
        assert_eq!(reads("{'a': tool.title}.a == 'x'").0, fields(&[("title", Reads::Whole)]));
        assert_eq!(reads("tool.meta.map(k, ctx.x).size() > 0").1, fields(&[("x", Reads::Whole)]));
    }

    #[test]
    fn reads_union_and_cover() {
        let role = fields(&[("claims", fields(&[("role", Reads::Whole)]))]);
        let sub = fields(&[("sub", Reads::Whole)]);
        let mut both = role.clone();
        both.union(&sub);
        assert!(both.covers(&role) && both.covers(&sub) && !role.covers(&sub) && !role.covers(&both));
        assert!(Reads::Whole.covers(&both) && both.covers(&Reads::Nothing) && !both.covers(&Reads::Whole));
        let mut whole = both.clone();
        whole.union(&Reads::Whole);
        assert_eq!(whole, Reads::Whole);
        assert_eq!(both.field("claims").field("role"), &Reads::Whole);
        assert_eq!(both.field("other"), &Reads::Nothing);
        assert_eq!(Reads::Whole.field("x"), &Reads::Whole);
    }

    /// `source` compiled as before selections were put on their variable.
    fn undirected(source: &str) -> Expression {
        let mut program = Expression::compile(source).expect("compiles");
        let mut tree = env().compile(source).expect("parses").expression().clone();
        instrument(&mut tree);
        program.tree = tree;
        program
    }

    #[test]
    fn selections_put_on_their_variable_give_the_same_outcomes() {
        let claims = |role: Value| Value::from(HashMap::from([("role".to_string(), role)]));
        let ctxs = [
            Value::from(HashMap::from([("claims".to_string(), claims(Value::from("admin")))])),
            Value::from(HashMap::from([("claims".to_string(), claims(Value::Int(1)))])),
            Value::from(HashMap::from([("claims".to_string(), Value::from("text"))])),
            Value::from(HashMap::from([("other".to_string(), Value::Null)])),
            Value::List(Arc::new(vec![Value::Int(1)])),
            Value::Null,
        ];
        let sources = [
            "ctx.claims.role == 'admin' || tool.name.startsWith('get_')",
            "has(ctx.claims.role) && ctx.claims.role != ''",
            "has(ctx.claims)",
            ".ctx.claims.role == 'admin'",
            "tool.annotations.readOnlyHint || tool.missing",
            "[{'name': 'a'}].exists(tool, tool.name == 'a') && ctx.claims.role.size() > 0",
            "ctx.claims.all(k, k == 'role') && tool.name.size() > 0",
            "tool.name.startsWith(ctx.claims.role)",
        ];
        for source in sources {
            let (direct, plain) = (Expression::compile(source).unwrap(), undirected(source));
            for ctx in &ctxs {
                for name in ["get_me", "delete_me"] {
                    let (a, b) = (direct.evaluate(tool(name, true), ctx.clone()), plain.evaluate(tool(name, true), ctx.clone()));
                    assert_eq!(a, b, "{source} {ctx:?}");
                }
            }
        }
    }

    #[test]
    fn a_program_under_a_ctx_gives_the_same_outcomes() {
        let ctxs = [
            Value::from(HashMap::from([
                ("role".to_string(), Value::from("admin")),
                ("l".to_string(), Value::List(Arc::new(vec![Value::Int(1), Value::Int(2)]))),
                ("n".to_string(), Value::Int(i64::MAX)),
            ])),
            Value::from(HashMap::from([("role".to_string(), Value::Int(3))])),
            Value::from("text"),
            Value::Null,
        ];
        let sources = [
            "ctx.role == 'admin' || tool.name.startsWith('get_')",
            "ctx.role == 'admin' && tool.missing",
            "ctx.n + 1 > 0 || tool.name == 'get_me'",
            "tool.name.startsWith(ctx.role) || ctx.l.size() > 1",
            "ctx.l.exists(x, x == ctx.l.size()) && tool.name != ''",
            "[1, 2].exists(ctx, ctx == 2) && ctx.l.size() == 2",
            "ctx.l.map(x, x + ctx.l.size()).exists(y, y > 3) && tool.annotations.readOnlyHint",
            "has(ctx.role) ? tool.name : 'x'",
            "type(ctx.role) == string && tool.name != ''",
            "ctx.role",
            "ctx.role == 'admin'",
        ];
        for source in sources {
            let program = Expression::compile_with_budget(source, 1_000).unwrap();
            for ctx in &ctxs {
                let shared = SharedValue::new(ctx.clone()).unwrap();
                let folded = program.under(&shared);
                for name in ["get_me", "delete_me"] {
                    let want = program.evaluate_shared(tool(name, true), &shared);
                    assert_eq!(folded.evaluate_shared(tool(name, true), &shared), want, "{source} {ctx:?}");
                }
            }
        }
        // The part that reads only ctx is a literal now.
        let rule = Expression::compile("ctx.role == 'admin' || tool.name.startsWith('get_')").unwrap();
        let folded = rule.under(&SharedValue::new(ctxs[1].clone()).unwrap());
        match &folded.tree.expr {
            Expr::Call(call) => assert!(matches!(call.args[0].expr, Expr::Literal(LiteralValue::Boolean(_)))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn matches_is_re2() {
        let word = |name: &str| run("tool.name.matches('^\\\\w+$')", name, false, Value::Null);
        assert_eq!(word("get_me"), Ok(true));
        assert_eq!(word("p\u{0430}yment"), Ok(false)); // a Cyrillic a
        assert_eq!(run("matches(tool.name, '^\\\\d+$')", "\u{0661}", false, Value::Null), Ok(false));
        let why = Expression::compile("tool.name.matches('(?=a)')").unwrap_err();
        assert!(why.starts_with("matches: ") && why.contains("not an RE2 regular expression"), "{why}");
        let ctx = Value::from(HashMap::from([("p".to_string(), Value::from("(a)\\1"))]));
        let bad = run("tool.name.matches(ctx.p)", "aa", false, ctx);
        match bad {
            Err(Failure::Error(why)) => {
                assert!(why.contains("not an RE2 regular expression"), "{why}");
                assert!(!why.contains('\n'), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_are_one_line() {
        for bad in ["tool.name ==", "(", "1 +* 2", "tool.name.startsWith('a'"] {
            let why = Expression::compile(bad).unwrap_err();
            assert!(!why.contains('\n'), "{bad}: {why}");
        }
    }

    #[test]
    fn the_deepest_tree_accepted_evaluates_on_a_small_stack() {
        // At the depth limit, left-deep; run on a 256 KiB stack, as a thread of
        // a host that shrinks its stacks would (an unoptimized build's frames
        // are far larger: it gets 4 MiB).
        let small = if cfg!(debug_assertions) { 4 << 20 } else { 256 << 10 };
        let on_small_stack = |program: Expression, tool: Value| {
            std::thread::Builder::new()
                .stack_size(small)
                .spawn(move || program.evaluate(tool, Value::Null))
                .expect("a thread")
                .join()
                .expect("no overflow")
        };
        let chain = vec!["1"; MAX_DEPTH - 2].join(" + ") + " > 0 && tool.name == 'x'";
        let program = Expression::compile(&chain).expect("within the limits");
        let verdict = on_small_stack(program, tool("x", false));
        assert_eq!(verdict, Ok(true));
        // Comprehensions nested to the limit (the cost step adds a frame to each).
        let loops = (0..20).fold("x0 == 1".to_string(), |body, i| format!("[1].exists(x{i}, {body})"));
        let program = Expression::compile(&loops).expect("within the limits");
        let verdict = on_small_stack(program, Value::Null);
        assert_eq!(verdict, Ok(true));
        let nested = format!("{}true{}", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2)) + " != []";
        let program = Expression::compile(&nested).expect("within the limits");
        let verdict = on_small_stack(program, Value::Null);
        assert_eq!(verdict, Ok(true));
    }
}
