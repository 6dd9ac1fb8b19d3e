//! DLPack through the safe layer: `Tensor::to_dlpack` and
//! `Context::tensor_from_dlpack` share memory both ways, each deleter runs
//! exactly once whichever side lets go first, and refusals name the rule.
use std::sync::atomic::{AtomicUsize, Ordering};

use octet::sys;
use octet::{Component, Context, DType, DlpackTensor, Status, TensorDesc};

/// A producer of host FP32 memory, as a framework would be: 64-byte
/// aligned data, a deleter that counts its calls.
#[repr(C, align(64))]
struct Aligned([f32; 8]);

struct Producer {
    data: Box<Aligned>,
    shape: [i64; 2],
    strides: [i64; 2],
    deleted: AtomicUsize,
    managed: sys::octet_dlpack_managed_tensor_versioned,
}

unsafe extern "C" fn count_deletion(this: *mut sys::octet_dlpack_managed_tensor_versioned) {
    let producer = (*this).manager_ctx as *const Producer;
    (*producer).deleted.fetch_add(1, Ordering::SeqCst);
}

impl Producer {
    /// Boxed so that the struct's pointers into it stay put.
    fn new(byte_offset: u64) -> Box<Producer> {
        let mut p = Box::new(Producer {
            data: Box::new(Aligned([0.0; 8])),
            shape: [2, 3],
            strides: [3, 1],
            deleted: AtomicUsize::new(0),
            managed: unsafe { std::mem::zeroed() },
        });
        let ctx: *mut Producer = &mut *p;
        p.managed.version = sys::octet_dlpack_version { major: 1, minor: 0 };
        p.managed.manager_ctx = ctx.cast();
        p.managed.deleter = Some(count_deletion);
        p.managed.dl_tensor = sys::octet_dlpack_tensor {
            data: p.data.0.as_mut_ptr().cast(),
            device: sys::octet_dlpack_device {
                device_type: sys::OCTET_DLPACK_DEVICE_CPU,
                device_id: 0,
            },
            ndim: 2,
            dtype: sys::octet_dlpack_dtype {
                code: sys::OCTET_DLPACK_CODE_FLOAT,
                bits: 32,
                lanes: 1,
            },
            shape: p.shape.as_mut_ptr(),
            strides: p.strides.as_mut_ptr(),
            byte_offset,
        };
        p
    }

    fn take(&mut self) -> DlpackTensor {
        unsafe { DlpackTensor::from_raw(&mut self.managed) }.unwrap()
    }

    fn deleted(&self) -> usize {
        self.deleted.load(Ordering::SeqCst)
    }
}

#[test]
fn an_export_shares_memory_and_outlives_its_tensor() -> octet::Result<()> {
    let ctx = Context::new("reference")?;
    let mut exported = {
        let t = ctx.tensor_from_f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
        let mut e = t.to_dlpack(Component::Data)?;
        assert_eq!(e.device(), (sys::OCTET_DLPACK_DEVICE_CPU, 0));
        assert_eq!(e.shape(), &[2, 3]);
        assert_eq!(e.dtype()?, DType::Fp32);
        assert_eq!(e.as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        e.as_mut_slice::<f32>()?[0] = -7.0; // a write through DLPack is the tensor's
        assert_eq!(t.to_vec::<f32>()?[0], -7.0);
        assert!(e.as_slice::<u8>().is_err(), "FP32 data read as u8 codes");
        e
    }; // the tensor is dropped first: the export keeps the memory
    assert_eq!(exported.as_mut_slice::<f32>()?[5], 6.0);
    drop(exported);
    Ok(())
}

#[test]
fn a_quantized_tensor_exports_codes_and_scales_separately() -> octet::Result<()> {
    let ctx = Context::new("reference")?;
    let x = ctx.tensor_from_f32(&[1, 4], &[1.0, -2.0, 3.0, 0.5])?;
    let mut q = ctx.tensor(&TensorDesc::quantized(
        DType::E4m3,
        &[1, 4],
        sys::OCTET_USAGE_ROWWISE,
    ))?;
    q.copy_component_from_host(Component::Scale, &[64.0f32])?;
    ctx.quantize(&x, &mut q)?;
    let codes = q.to_dlpack(Component::Data)?;
    assert_eq!(
        codes.dl_tensor().dtype.code,
        sys::OCTET_DLPACK_CODE_FLOAT8_E4M3FN
    );
    assert_eq!(codes.as_slice::<u8>()?, q.to_vec::<u8>()?.as_slice());
    let scale_inv = q.to_dlpack(Component::ScaleInv)?;
    assert_eq!(scale_inv.as_slice::<f32>()?, &[1.0 / 64.0]);
    let err = x.to_dlpack(Component::Scale).unwrap_err(); // a plain tensor has DATA only
    assert_eq!(err.status(), Status::InvalidArgument);
    Ok(())
}

#[test]
fn an_import_shares_memory_and_calls_the_deleter_once() -> octet::Result<()> {
    let ctx = Context::new("reference")?;
    let mut p = Producer::new(0);
    p.data.0[..6].copy_from_slice(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    {
        let mut t = ctx.tensor_from_dlpack(p.take())?;
        assert_eq!(t.to_vec::<f32>()?, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        t.copy_from_host(&[9.0f32, 8.0, 7.0, 6.0, 5.0, 4.0])?;
        assert_eq!(p.deleted(), 0);
        // and exported again: the export keeps the producer's memory past the tensor
        let again = t.to_dlpack(Component::Data)?;
        drop(t);
        assert_eq!(p.deleted(), 0);
        assert_eq!(again.as_slice::<f32>()?[0], 9.0);
    }
    assert_eq!(p.deleted(), 1);
    assert_eq!(p.data.0[0], 9.0);
    Ok(())
}

#[test]
fn a_refused_import_names_the_rule_and_deletes_once() {
    let ctx = Context::new("reference").unwrap();
    let mut misaligned = Producer::new(2); // half an f32 past a 64-byte boundary: not element-aligned
    let err = ctx.tensor_from_dlpack(misaligned.take()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("align"), "{}", err.message());
    assert_eq!(misaligned.deleted(), 1); // dropped by the refused call

    let mut transposed = Producer::new(0);
    transposed.strides = [1, 2];
    let managed = transposed.take();
    assert!(
        managed.as_slice::<f32>().is_err(),
        "a transposed tensor has no slice view"
    );
    assert!(ctx.tensor_from_dlpack(managed).is_err());
    assert_eq!(transposed.deleted(), 1);

    let mut read_only = Producer::new(0);
    read_only.managed.flags = sys::OCTET_DLPACK_FLAG_READ_ONLY;
    let mut managed = read_only.take();
    assert!(managed.as_mut_slice::<f32>().is_err());
    assert!(managed.as_slice::<f32>().is_ok());
    assert!(ctx
        .tensor_from_dlpack(managed)
        .unwrap_err()
        .message()
        .contains("read"));
    assert_eq!(read_only.deleted(), 1);
}
