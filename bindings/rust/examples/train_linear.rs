//! Trains an Octet Linear layer from Rust, as docs/examples/train_linear.c
//! does from C, with the same calls: it fits y = A x + b, with A and b fixed
//! and known, by SGD on the mean squared error, with the layer's GEMMs in FP8
//! (current scaling, E4M3 forward, E5M2 gradients) inside an autocast scope.
//!
//! The host keeps nothing but the data and the FP32 master parameters: each
//! step uploads a batch, runs forward, computes the loss and its gradient on
//! the host, runs backward, reads the layer's gradients and writes the
//! updated parameters back. It prints the loss every 50 steps and exits
//! non-zero unless the final loss is below 1% of the initial one.
//!
//! Run (after building liboctet into build/, see docs/rust.md):
//!   cargo run --example train_linear [backend]   (default: reference)
//! `cargo test` runs it too (the test at the bottom).
// The loops follow the C example's index for index; `!(a < b)` also
// rejects a NaN loss.
#![allow(clippy::needless_range_loop, clippy::neg_cmp_op_on_partial_ord)]

use std::io::Write;

use octet::{Context, DType, Format, LinearOptions, Recipe, TensorDesc};

const IN: usize = 16;
const OUT: usize = 8;
const BATCH: usize = 32;
const STEPS: usize = 300;
const LEARNING_RATE: f32 = 1.0;

/// A small deterministic generator: uniform in [-1, 1), the C example's.
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f32 {
        self.0 = (self.0.wrapping_mul(1103515245).wrapping_add(12345)) & 0x7fff_ffff;
        self.0 as f32 / 1073741824.0 - 1.0
    }
}

/// Trains for `steps` steps on `backend`, writing the loss every 50 steps
/// to `log`; returns the first and last losses.
fn train(backend: &str, steps: usize, log: &mut dyn Write) -> octet::Result<(f64, f64)> {
    let mut rng = Uniform(12345);
    let mut a = [[0f32; IN]; OUT]; // the map to learn
    let mut b = [0f32; OUT];
    for i in 0..OUT {
        for j in 0..IN {
            a[i][j] = rng.next();
        }
        b[i] = 0.5 * rng.next();
    }

    let ctx = Context::new(backend)?;
    let recipe = Recipe::current(Format::Hybrid)?;
    let layer = ctx.linear(&LinearOptions::new(IN as i64, OUT as i64))?;

    // FP32 master parameters, starting at zero (the layer leaves them
    // unspecified), and the layer's own tensors, borrowed from it.
    let mut w = vec![0f32; OUT * IN];
    let mut bias = vec![0f32; OUT];
    let weight_index = layer.find_parameter("weight")?;
    let bias_index = layer.find_parameter("bias")?;
    let mut weight = layer.parameter(weight_index)?;
    let mut bias_param = layer.parameter(bias_index)?;
    weight.copy_from_host(&w)?;
    bias_param.copy_from_host(&bias)?;

    let mut tx = ctx.tensor(&TensorDesc::new(DType::Fp32, &[BATCH as i64, IN as i64]))?;
    let mut ty = ctx.tensor(&TensorDesc::new(DType::Fp32, &[BATCH as i64, OUT as i64]))?;
    let mut tdy = ctx.tensor(&TensorDesc::new(DType::Fp32, &[BATCH as i64, OUT as i64]))?;

    let (mut x, mut target) = (vec![0f32; BATCH * IN], vec![0f32; BATCH * OUT]);
    let (mut y, mut dy) = (vec![0f32; BATCH * OUT], vec![0f32; BATCH * OUT]);
    let (mut gw, mut gbias) = (vec![0f32; OUT * IN], vec![0f32; OUT]);
    let (mut first_loss, mut loss) = (None, 0.0);

    for step in 1..=steps {
        // A fresh batch: x uniform in [-1, 1), target = A x + b.
        for r in 0..BATCH {
            for j in 0..IN {
                x[r * IN + j] = rng.next();
            }
            for i in 0..OUT {
                let mut t = b[i];
                for j in 0..IN {
                    t += a[i][j] * x[r * IN + j];
                }
                target[r * OUT + i] = t;
            }
        }
        tx.copy_from_host(&x)?;

        let scope = ctx.autocast(&recipe)?; // the layer's GEMMs run in FP8
        let saved = layer.forward(&tx, &mut ty)?;
        ty.copy_to_host(&mut y)?;
        // loss = mean (y - target)^2; dloss/dy = 2 (y - target) / n
        loss = 0.0;
        let n = (BATCH * OUT) as f32;
        for i in 0..BATCH * OUT {
            let d = y[i] - target[i];
            loss += f64::from(d) * f64::from(d);
            dy[i] = 2.0 * d / n;
        }
        loss /= f64::from(n);
        tdy.copy_from_host(&dy)?;
        layer.backward(saved, &tdy, None, false)?; // consumes saved
        scope.end()?;

        first_loss.get_or_insert(loss);
        if step == 1 || step % 50 == 0 {
            writeln!(log, "step {step:3}  loss {loss:.6}").expect("the log is writable");
        }

        // SGD on the host masters, then back into the layer.
        layer.gradient(weight_index)?.copy_to_host(&mut gw)?;
        layer.gradient(bias_index)?.copy_to_host(&mut gbias)?;
        for (p, g) in w.iter_mut().zip(&gw) {
            *p -= LEARNING_RATE * g;
        }
        for (p, g) in bias.iter_mut().zip(&gbias) {
            *p -= LEARNING_RATE * g;
        }
        weight.copy_from_host(&w)?;
        bias_param.copy_from_host(&bias)?;
        layer.new_step()?;
    }
    Ok((first_loss.unwrap_or(loss), loss))
}

fn final_line(first: f64, last: f64) -> String {
    format!(
        "final loss {last:.6} = {:.4}% of the initial {first:.6}",
        100.0 * last / first
    )
}

fn main() {
    let backend = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "reference".into());
    match train(&backend, STEPS, &mut std::io::stdout()) {
        Ok((first, last)) => {
            println!("{}", final_line(first, last));
            if !(last < 0.01 * first) {
                eprintln!("train_linear: the loss did not fall below 1% of its initial value");
                std::process::exit(1);
            }
        }
        Err(error) => {
            eprintln!("train_linear: {error}");
            std::process::exit(1);
        }
    }
}

#[test]
fn the_loss_falls_below_one_percent() {
    let (first, last) = train("reference", STEPS, &mut std::io::sink()).unwrap();
    assert!(first > 0.1, "initial loss {first}");
    assert!(last < 0.01 * first, "loss {first} -> {last}");
}

#[test]
fn a_bad_backend_is_an_error_with_its_message() {
    let error = train("no-such-backend", 1, &mut std::io::sink()).unwrap_err();
    assert_eq!(error.status(), octet::Status::NotFound);
    assert!(error.message().contains("no-such-backend"), "{error}");
}

/// The C example (docs/examples/train_linear.c), compiled with `CC` (else
/// `cc`) against the same liboctet, prints exactly what this one prints.
#[test]
fn prints_what_the_c_example_prints() {
    use std::path::Path;
    use std::process::Command;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = env!("OCTET_LINKED_LIB_DIR");
    let exe = std::env::temp_dir().join(format!("octet-train-linear-c-{}", std::process::id()));
    let cc = std::env::var("CC").ok().filter(|cc| !cc.is_empty());
    let cc = cc.unwrap_or_else(|| "cc".into());
    let built = Command::new(&cc)
        .args(["-std=c99", "-pedantic", "-Wall"])
        .arg(repo.join("docs/examples/train_linear.c"))
        .arg("-I")
        .arg(repo.join("api/include"))
        .arg(format!("-L{lib}"))
        .arg("-loctet")
        .arg(format!("-Wl,-rpath,{lib}"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC): {e}"));
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let c = Command::new(&exe).arg("reference").output().unwrap();
    std::fs::remove_file(&exe).ok();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));

    let mut rust = Vec::new();
    let (first, last) = train("reference", STEPS, &mut rust).unwrap();
    writeln!(rust, "{}", final_line(first, last)).unwrap();
    assert_eq!(
        String::from_utf8(rust).unwrap(),
        String::from_utf8(c.stdout).unwrap()
    );
}
