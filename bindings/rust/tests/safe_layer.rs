//! The safe layer against the reference backend: errors carry status and
//! message, host copies check lengths and types before calling the library,
//! handles are freed, and the Send/Sync promises of docs/rust.md hold.
use octet::{sys, Component, Context, DType, LinearOptions, Recipe, Status, TensorDesc};

fn reference() -> Context {
    Context::new("reference").expect("a reference context")
}

#[test]
fn versions_and_backends() {
    assert_eq!(octet::abi_version().major, sys::OCTET_ABI_MAJOR);
    assert!(octet::abi_version().minor >= sys::OCTET_ABI_MINOR);
    let backends = octet::backends().unwrap();
    assert_eq!(backends[0].name, "reference");
    assert_eq!(reference().info().unwrap().name, "reference");
    assert_eq!(DType::E4m3.size(), 1);
    assert_eq!(DType::Bf16.name(), "bf16");
    assert_eq!(DType::from_code(sys::OCTET_DTYPE_E5M2), Some(DType::E5m2));
}

#[test]
fn an_error_carries_the_status_and_the_message() {
    let error = Context::new("nosuch").unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
    assert_eq!(error.status().name(), "OCTET_STATUS_NOT_FOUND");
    assert!(error.message().contains("nosuch"), "{}", error.message());
    let shown = error.to_string();
    assert!(shown.starts_with("OCTET_STATUS_NOT_FOUND: "), "{shown}");

    // A rule broken inside the library: in_features must be >= 1.
    let ctx = reference();
    let error = ctx.linear(&LinearOptions::new(0, 4)).unwrap_err();
    assert_eq!(error.status(), Status::InvalidArgument);
    assert!(
        error.message().contains("in_features"),
        "{}",
        error.message()
    );
}

#[test]
fn host_copies_round_trip() {
    let ctx = reference();
    let data: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
    let tensor = ctx.tensor_from_f32(&[2, 3], &data).unwrap();
    assert_eq!(tensor.shape().unwrap(), [2, 3]);
    assert_eq!(tensor.dtype().unwrap(), DType::Fp32);
    assert_eq!(tensor.to_vec::<f32>().unwrap(), data);
    assert_eq!(ctx.amax(&tensor).unwrap(), 1.5);
}

#[test]
fn host_copies_check_length_and_type_first() {
    let ctx = reference();
    let mut tensor = ctx.tensor(&TensorDesc::new(DType::Fp32, &[2, 3])).unwrap();
    let error = tensor.copy_from_host(&[0f32; 5]).unwrap_err();
    assert_eq!(error.status(), Status::InvalidArgument);
    assert!(error.message().contains("24 bytes"), "{}", error.message());
    let error = tensor.copy_to_host(&mut [0f32; 7]).unwrap_err();
    assert!(error.message().contains("28"), "{}", error.message());
    let error = tensor.copy_from_host(&[0u8; 24]).unwrap_err();
    assert!(error.message().contains("fp32"), "{}", error.message());
    let error = TensorDesc::new(DType::Fp32, &[1; 9]);
    assert_eq!(
        ctx.tensor(&error).unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn quantize_and_dequantize_per_tensor() {
    let ctx = reference();
    let data = [1.0f32, -2.0, 0.25, 448.0];
    let input = ctx.tensor_from_f32(&[1, 4], &data).unwrap();
    let desc = TensorDesc::quantized(DType::E4m3, &[1, 4], sys::OCTET_USAGE_ROWWISE);
    let mut q = ctx.tensor(&desc).unwrap();
    ctx.quantize(&input, &mut q).unwrap();
    let codes = q.to_vec::<u8>().unwrap();
    let expected: Vec<u8> = data
        .iter()
        .map(|&x| octet::fp8_encode(x, DType::E4m3, true).unwrap())
        .collect();
    assert_eq!(codes, expected); // SCALE starts at 1
    let mut amax = [0f32];
    q.copy_component_to_host(Component::Amax, &mut amax)
        .unwrap();
    assert_eq!(amax[0], 448.0);
    let mut back = ctx.tensor(&TensorDesc::new(DType::Fp32, &[1, 4])).unwrap();
    ctx.dequantize(&q, &mut back).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), data); // all exact in E4M3
    assert_eq!(octet::fp8_decode(0x7E, DType::E4m3).unwrap(), 448.0);
    assert!(octet::fp8_encode(1.0, DType::Fp32, true).is_err());
}

#[test]
fn a_layer_trains_in_high_precision_and_under_a_layer_recipe() {
    let ctx = reference();
    let recipe = Recipe::delayed(octet::Format::Hybrid, 0, 16).unwrap();
    assert_eq!(recipe.info().unwrap().kind, sys::OCTET_RECIPE_DELAYED);
    for recipe in [None, Some(&recipe)] {
        let layer = ctx
            .linear(&LinearOptions {
                recipe,
                ..LinearOptions::new(4, 2)
            })
            .unwrap();
        assert_eq!(layer.parameter_names().unwrap(), ["weight", "bias"]);
        layer
            .parameter(0)
            .unwrap()
            .copy_from_host(&[0.5f32; 8])
            .unwrap();
        layer
            .parameter(1)
            .unwrap()
            .copy_from_host(&[1.0f32; 2])
            .unwrap();
        let x = ctx.tensor_from_f32(&[3, 4], &[1.0; 12]).unwrap();
        let mut y = ctx.tensor(&TensorDesc::new(DType::Fp32, &[3, 2])).unwrap();
        layer.infer(&x, &mut y).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [3.0; 6]);
        let saved = layer.forward(&x, &mut y).unwrap();
        let dy = ctx.tensor_from_f32(&[3, 2], &[1.0; 6]).unwrap();
        let mut dx = ctx.tensor(&TensorDesc::new(DType::Fp32, &[3, 4])).unwrap();
        layer.backward(saved, &dy, Some(&mut dx), false).unwrap();
        assert_eq!(dx.to_vec::<f32>().unwrap(), [1.0; 12]);
        assert_eq!(
            layer.gradient(1).unwrap().to_vec::<f32>().unwrap(),
            [3.0; 2]
        );
        // A saved handle dropped without backward is released.
        let _unused = layer.forward(&x, &mut y).unwrap();
        assert_eq!(
            layer.find_parameter("nope").unwrap_err().status(),
            Status::NotFound
        );
    }
}

#[test]
fn send_and_sync_as_documented() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Context>();
    send::<Recipe>();
    sync::<Recipe>();
    send::<octet::Error>();
    sync::<octet::Error>();
    // A context moves to another thread and works there.
    let ctx = reference();
    let shape = std::thread::spawn(move || {
        let t = ctx.tensor_from_f32(&[2], &[1.0, 2.0]).unwrap();
        t.shape().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(shape, [2]);
}

#[test]
fn quantizers_owned_and_borrowed() {
    use octet::{Format, Quantizer, Role};
    let ctx = reference();
    let recipe = Recipe::current(Format::Hybrid).unwrap();
    assert_eq!(recipe.tensor_format(Role::Gradient).unwrap().0, DType::E5m2);
    let mut quantizer = Quantizer::new(&recipe, Role::Input).unwrap();
    let input = ctx
        .tensor_from_f32(&[1, 4], &[1.0, -2.0, 0.5, 4.0])
        .unwrap();
    let desc = recipe
        .tensor_desc(Role::Input, &[1, 4], sys::OCTET_USAGE_ROWWISE)
        .unwrap();
    assert_eq!(desc.dtype, DType::E4m3);
    let mut q = ctx.tensor(&desc).unwrap();
    quantizer.quantize(&ctx, &input, &mut q).unwrap();
    let info = quantizer.info().unwrap();
    assert_eq!(info.amax, 4.0);
    assert_eq!(info.scale, 448.0 / 4.0); // current scaling: fp8_max / amax
    let mut scale = [0f32];
    q.copy_component_to_host(Component::Scale, &mut scale)
        .unwrap();
    assert_eq!(scale[0], info.scale);

    // Checkpoint round trip into a fresh quantizer.
    let bytes = quantizer.save().unwrap();
    let mut other = Quantizer::new(&recipe, Role::Input).unwrap();
    other.load(&bytes).unwrap();
    assert_eq!(other.info().unwrap().scale, info.scale);
    assert_eq!(
        other.load(&bytes[..bytes.len() - 1]).unwrap_err().status(),
        Status::InvalidArgument
    );

    // A layer's quantizers are borrowed; they see the layer's forwards.
    let delayed = Recipe::delayed(Format::Hybrid, 0, 4).unwrap();
    let layer = ctx
        .linear(&LinearOptions {
            recipe: Some(&delayed),
            ..LinearOptions::new(4, 2)
        })
        .unwrap();
    layer
        .parameter(0)
        .unwrap()
        .copy_from_host(&[0.25f32; 8])
        .unwrap();
    let mut y = ctx.tensor(&TensorDesc::new(DType::Fp32, &[1, 2])).unwrap();
    layer.infer(&input, &mut y).unwrap();
    let input_quantizer = layer.quantizer(0, Role::Input).unwrap();
    assert_eq!(input_quantizer.info().unwrap().amax, 4.0);
    assert_eq!(input_quantizer.info().unwrap().role, sys::OCTET_ROLE_INPUT);
}

#[test]
fn fused_layers_train() {
    use octet::{Activation, Norm};
    let ctx = reference();
    let norm_linear = ctx
        .layernorm_linear(&LinearOptions::new(8, 4), Norm::LayerNorm, 1e-5)
        .unwrap();
    assert_eq!(
        norm_linear.parameter_names().unwrap(),
        ["norm_weight", "norm_bias", "weight", "bias"]
    );
    let mlp = ctx
        .layernorm_mlp(
            &LinearOptions::new(8, 8),
            16,
            Norm::RmsNorm,
            Activation::SwiGlu,
            1e-5,
        )
        .unwrap();
    assert_eq!(
        mlp.parameter_names().unwrap(),
        [
            "norm_weight",
            "fc1_weight",
            "fc1_bias",
            "fc2_weight",
            "fc2_bias"
        ]
    );
    assert_eq!(mlp.parameter(1).unwrap().shape().unwrap(), [32, 8]); // 2 * ffn for SwiGLU
    let x: Vec<f32> = (0..16).map(|i| (i as f32 * 0.37).sin()).collect();
    let x = ctx.tensor_from_f32(&[2, 8], &x).unwrap();
    for (layer, out) in [(&norm_linear, 4), (&mlp, 8)] {
        for name in layer.parameter_names().unwrap() {
            let index = layer.find_parameter(&name).unwrap();
            let mut p = layer.parameter(index).unwrap();
            let n = p.to_vec::<f32>().unwrap().len();
            let values: Vec<f32> = (0..n).map(|i| 0.1 + 0.01 * (i % 7) as f32).collect();
            p.copy_from_host(&values).unwrap();
        }
        let mut y = ctx
            .tensor(&TensorDesc::new(DType::Fp32, &[2, out]))
            .unwrap();
        let saved = layer.forward(&x, &mut y).unwrap();
        assert!(y.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));
        let dy = ctx
            .tensor_from_f32(&[2, out], &vec![1.0; 2 * out as usize])
            .unwrap();
        let mut dx = ctx.tensor(&TensorDesc::new(DType::Fp32, &[2, 8])).unwrap();
        layer.backward(saved, &dy, Some(&mut dx), false).unwrap();
        assert!(dx.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));
    }
}

#[test]
fn the_rowwise_recipe_reports_its_kind_and_high_precision_wgrad() {
    for hp in [false, true] {
        let recipe = Recipe::rowwise(octet::Format::E4m3, hp).unwrap();
        let info = recipe.info().unwrap();
        assert_eq!(info.kind, sys::OCTET_RECIPE_ROWWISE);
        assert_eq!(info.override_wgrad, i32::from(hp));
        let (mut dtype, mut mode) = (0, 0);
        // SAFETY: a live recipe and valid out-pointers.
        let status = unsafe {
            sys::octet_recipe_tensor_format(recipe.as_ptr(), sys::OCTET_ROLE_INPUT, &mut dtype, &mut mode)
        };
        assert_eq!(status, sys::OCTET_STATUS_SUCCESS);
        assert_eq!(dtype, sys::OCTET_DTYPE_E4M3);
        assert_eq!(mode as u32, sys::OCTET_SCALING_PER_ROW);
    }
}
