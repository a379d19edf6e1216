"""The deterministic doubt check: figures a reply gives that its sources do not state, or state of
something else."""

from backend.turns.figures import figures, unsupported

POLICY = """## Warranty
- All jackets and backpacks carry a 3-year warranty against manufacturing defects.
- Tents carry a 2-year warranty; zips and poles can be repaired free of charge within it.
## Shipping
- Standard delivery takes 2 to 4 business days in the EU and costs 4.95 EUR.
- Express delivery takes 1 business day and costs 12.50 EUR.
- Call +31 10 555 0145."""

ZH_POLICY = "## 保修\n- 整机保修3年，压缩机和电机保修10年。\n- 服务热线：400-820-1357。"


def test_figures_are_numbers_with_their_units_in_words_or_digits():
    assert figures("a three-year warranty, 2 to 4 business days, 12,50 EUR") == {
        ("3", "year"), ("2", "day"), ("4", "day"), ("12.5", "eur"),
    }  # fmt: skip
    assert figures("整机保修三年，热线400-820-1357") == {
        ("3", "year"),
        ("400", None),
        ("820", None),
        ("1357", None),
    }
    assert figures("one of our colleagues will reply; see step 1.") == {("1", None)}  # no unit, no figure


def test_what_the_policy_states_is_supported():
    assert unsupported("Backpacks carry a three-year warranty; call +31 10 555 0145.", POLICY) == []
    assert unsupported("Standard delivery takes 2 to 4 business days and costs 4.95 EUR.", POLICY) == []
    assert unsupported("冰箱整机保修3年，压缩机保修10年。热线400-820-1357。", ZH_POLICY) == []


def test_invented_figures_and_figures_said_of_something_else_are_doubtful():
    assert unsupported("Express delivery costs 9.99 EUR.", POLICY) == ["9.99 eur is not in the policy"]
    assert unsupported("Call us on 0800 123 456.", POLICY) == [
        f"{n} is not in the policy" for n in ("123", "456", "800")
    ]
    assert unsupported("The warranty on backpacks is 2 years.", POLICY) == [
        "2 year where the policy says 3 year"
    ]
    assert unsupported("Express delivery costs 4.95 EUR.", POLICY) == [
        "4.95 eur where the policy says 12.5 eur"
    ]
    assert unsupported("冰箱整机保修10年。", ZH_POLICY) == ["10 year where the policy says 3 year"]
