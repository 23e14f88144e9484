//! A plain component (a test fixture): ordinary exported functions of
//! every WIT type family and no wasm-mcp contract. The host serves each
//! function as a tool.

wit_bindgen::generate!({ path: "wit", world: "plain" });

struct Plain;

impl Guest for Plain {
    fn greet(name: String) -> String {
        format!("Hello, {name}!")
    }

    fn convert(length: Length, target: Unit) -> Length {
        let metres = |unit: Unit| match unit {
            Unit::Metre => 1.0,
            Unit::Foot => 0.3048,
            Unit::Inch => 0.0254,
        };
        Length {
            amount: length.amount * metres(length.unit) / metres(target),
            unit: target,
        }
    }

    fn area(shape: Shape) -> Result<f64, String> {
        match shape {
            Shape::Circle(r) if r >= 0.0 => Ok(std::f64::consts::PI * r * r),
            Shape::Square(s) if s >= 0.0 => Ok(s * s),
            Shape::Point => Ok(0.0),
            _ => Err("a size cannot be negative".to_owned()),
        }
    }

    fn total(numbers: Vec<i32>, scale: Option<u8>) -> i64 {
        numbers.iter().map(|&n| i64::from(n)).sum::<i64>() * i64::from(scale.unwrap_or(1))
    }

    fn style_word(word: String, style: Style) -> (String, u32) {
        let mut word = if style.contains(Style::LOUD) {
            word.to_uppercase()
        } else {
            word
        };
        if style.contains(Style::BOLD) {
            word = format!("**{word}**");
        }
        let len = word.chars().count() as u32;
        (word, len)
    }

    fn ping() {}

    fn count_bytes(text: String) -> u64 {
        text.len() as u64
    }

    fn zeros(count: u32) -> Vec<u8> {
        vec![0; count as usize]
    }

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    }

    fn spin() {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

export!(Plain);
