"""Benchmark texts dominated by long pre-tokens (issue 45): scripts written without spaces and code-like runs.

Each set is generated deterministically (``random.Random`` with a fixed seed) from material written for this file
(the sentences below were composed for it; no corpus is copied), into 3,000 texts of ~300-900 bytes:

- ``cjk``: Chinese and Japanese (kanji with hiragana / katakana) clauses joined with no space, so that cl100k's and
  o200k's patterns make each run of dozens of characters one pre-token (up to a few hundred bytes).
- ``thai``: Thai clauses (no spaces between words), runs of 20-60 characters of 3 bytes each.
- ``korean``: Hangul sentences (spaces between words: short pieces, the CJK set's contrast).
- ``code``: long camelCase / PascalCase identifiers (40-120 letters: one pre-token) in minified JavaScript.
- ``base64``: base64 blobs of random bytes (76-column lines), and hex digests.
"""

from __future__ import annotations

import base64
import random

ZH = [
    "敏捷的棕色狐狸跳过了懒惰的狗",
    "孩子们在花园里安静地看着它们",
    "这是一个用来测试分词速度的简单句子",
    "城市的夜晚灯火通明而街道上依然人来人往",
    "我们需要在服务器上部署新的模型并监控它的延迟",
    "研究人员发现这种方法在大规模数据集上表现更好",
    "天气预报说明天下午会有雷阵雨请记得带伞",
    "他把那本关于历史的书放在桌子上然后出门去了",
    "人工智能技术正在改变许多行业的工作方式",
    "经过多次实验我们终于找到了问题的根本原因",
    "中华人民共和国成立于一九四九年十月一日",
    "请在提交代码之前运行所有的单元测试并检查格式",
    "春天来了山上的花都开了河里的冰也化了",
    "这家餐厅的菜很好吃但是价格有点贵",
    "学生们正在图书馆里准备期末考试",
]
JA = [
    "素早い茶色の狐が怠け者の犬を飛び越えた",
    "子供たちは庭からそれを静かに見ている",
    "東京の天気は明日の午後から雨になるでしょう",
    "新しいモデルをサーバーにデプロイしてレイテンシを監視します",
    "このプログラムはテキストをトークンに分割するためのものです",
    "私たちは何度も実験を繰り返して原因を突き止めた",
    "コンピュータサイエンスの研究者たちが集まって議論した",
    "ひらがなとカタカナと漢字が混ざった文章です",
    "昨日の会議ではプロジェクトの進捗について話し合いました",
    "駅前の喫茶店でコーヒーを飲みながら本を読んだ",
    "インターネットの普及によって情報の流通が大きく変わった",
    "おはようございますきょうもよろしくおねがいします",
]
PUNCT_ZH = ["，", "。", "、", "；", "："]
PUNCT_JA = ["、", "。", "「", "」"]
TH = [
    "สุนัขจิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจ",
    "เด็กๆกำลังดูอยู่ในสวนอย่างเงียบๆ",
    "วันนี้อากาศดีมากเราจึงไปเดินเล่นที่สวนสาธารณะ",
    "ประเทศไทยมีวัฒนธรรมที่หลากหลายและอาหารที่อร่อย",
    "นักวิจัยพบว่าวิธีนี้ทำงานได้ดีกับข้อมูลขนาดใหญ่",
    "กรุณาตรวจสอบรหัสผ่านของคุณก่อนเข้าสู่ระบบ",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "ฉันชอบอ่านหนังสือก่อนนอนทุกคืน",
    "การพัฒนาซอฟต์แวร์ต้องใช้ความอดทนและความรู้",
    "ร้านอาหารนี้มีชื่อเสียงเรื่องต้มยำกุ้ง",
]
KO = [
    "빠른 갈색 여우가 게으른 개를 뛰어넘었다",
    "아이들은 정원에서 조용히 그것을 지켜보고 있다",
    "내일 오후에는 서울에 비가 올 것으로 예상됩니다",
    "새로운 모델을 서버에 배포하고 지연 시간을 모니터링합니다",
    "연구자들은 이 방법이 대규모 데이터에서 더 잘 작동한다는 것을 발견했다",
    "대한민국의 수도는 서울특별시입니다",
    "프로그래밍 언어를 배우는 것은 생각보다 어렵지 않습니다",
    "도서관에서 학생들이 기말고사를 준비하고 있다",
]
WORDS = (
    "get set user account settings by id and timestamp create default handler factory abstract "
    "singleton proxy bean request response validate configuration manager service provider internal "
    "buffer stream reader writer async callback event listener registry resolve dependency module "
    "render component state update transform normalize serialize deserialize payload cache "
    "invalidate pending transaction commit rollback"
).split()


def _join(rng: random.Random, parts: list[str], punct: list[str], size: int) -> str:
    out = ""
    while len(out.encode()) < size:
        out += rng.choice(parts) + (rng.choice(punct) if rng.random() < 0.35 else "")
    return out


def cjk(n: int = 3000) -> list[str]:
    rng = random.Random(45)
    return [
        _join(rng, ZH, PUNCT_ZH, rng.randint(300, 900))
        if rng.random() < 0.5
        else _join(rng, JA, PUNCT_JA, rng.randint(300, 900))
        for _ in range(n)
    ]


def thai(n: int = 3000) -> list[str]:
    rng = random.Random(46)
    return [_join(rng, TH, [" ", "\n"], rng.randint(300, 900)) for _ in range(n)]


def korean(n: int = 3000) -> list[str]:
    rng = random.Random(47)
    return [_join(rng, KO, [". ", ", "], rng.randint(300, 900)) for _ in range(n)]


def _ident(rng: random.Random) -> str:
    ws = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    first = ws[0] if rng.random() < 0.5 else ws[0].title()
    return first + "".join(w.title() for w in ws[1:])


def code(n: int = 3000) -> list[str]:
    rng = random.Random(48)
    out = []
    for _ in range(n):
        s = ""
        size = rng.randint(300, 900)
        while len(s) < size:
            a, b, c = _ident(rng), _ident(rng), _ident(rng)
            s += rng.choice(
                [
                    f"function {a}(e,t){{return e.{b}(t)||{c}}}",
                    f"var {a}={b}.{c}({rng.randint(0, 999)});",
                    f"if(!{a}){{{b}=new {c}()}}",
                    f"{a}.prototype.{b}=function(){{this.{c}=null}};",
                ]
            )
        out.append(s)
    return out


def base64_blobs(n: int = 3000) -> list[str]:
    rng = random.Random(49)
    out = []
    for _ in range(n):
        raw = base64.b64encode(rng.randbytes(rng.randint(200, 600))).decode()
        lines = "\n".join(raw[i : i + 76] for i in range(0, len(raw), 76))
        out.append(lines if rng.random() < 0.7 else f"sha256:{rng.randbytes(32).hex()} {lines}")
    return out


SETS = {"cjk": cjk, "thai": thai, "korean": korean, "code": code, "base64": base64_blobs}
