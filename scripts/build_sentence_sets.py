"""Write the built-in sentence sets into sentence_sets/.

Run from the repository root: ``python scripts/build_sentence_sets.py``. The
output is deterministic; the committed .txt files are its output.
ImageNet class names come from torchvision's offline metadata.
"""

from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "sentence_sets"


def write(name, header, sentences):
    seen, unique = set(), []
    for s in sentences:
        if s.lower() not in seen:
            seen.add(s.lower())
            unique.append(s)
    lines = [f"# {h}" if h else "#" for h in header] + [f"# {len(unique)} sentences.", ""] + unique
    (OUT / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{name}: {len(unique)}")


def an(word):
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


URBAN_CONTENT = """building|skyscraper|house|bridge|tunnel|highway scene|sub-urban scene|industrial scene|
construction site|
rural road|dirt road|roundabout|intersection|parking lot|traffic jam|traffic|traffic light|traffic sign|street sign|
pedestrian crossing|crowd of pedestrians|pedestrian|cyclist|motorcyclist|bicycle|motorbike|scooter|rickshaw|car|truck|
bus|tram|train|jeep|van|tractor|ambulance|police car|taxi|trailer|caravan|horse cart|dog|cow|horse|bird|animal|
tree|bush|hedge|lawn|field|mountain|hill|forest|river|lake|sea|beach|desert|fence|guard-rail|wall|pole|street lamp|
billboard|advertisement board|garbage bin|pile of garbage|road barrier|traffic cone|rail track|sidewalk|curb|bench|
market stall|shop front|parked car|emergency vehicle|road work|speed bump|pothole|gravel road|cobblestone road|
snowy road|flooded road|muddy road|narrow street|wide avenue|overpass|toll booth|gas station|church|statue"""
URBAN_CONDITIONS = """at night|in the evening|at dusk|at dawn|at noon|in the morning|in a stormy weather|
in a foggy weather|
in a rainy weather|in a snowy weather|in a windy weather|in a dull weather|in a sunny weather|in a cloudy weather|
in winter|in autumn|in summer|in spring|in a city center|in a village|in the countryside|in India|in Europe|
in the mountains|in heavy traffic|on a highway|on a wet road|in a hailstorm|under street lights|against the sun"""
URBAN_QUALITY = """motion blur|overexposure|underexposure|low contrast|high contrast|lens flare|rain drops on the lens|
a dirty windshield|reflection on the road|shadows on the road|water on the road|mud on the road|branches on the road|
traffic cone on the road|obstacle on the road|road barrier on the road|rail track on the road|rocks on the road|
snow on the road|leaves on the road|rickshaw on the road|motorbike on the road|bike on the road|vehicle on the road|
bus on the road|tram on the road|jeep on the road|animal on the road|bird on the road|people on the road|
crowded background|crowded foreground|strong glare|noise|compression artifacts|a distorted wide-angle view|
a vignetting effect|headlights in the dark|a wet windshield|a cracked windshield"""


def words(block):
    return [w.strip() for w in block.replace("\n", "").split("|") if w.strip()]


def urban_scenes():
    s = [f"An image of {an(w)}" for w in words(URBAN_CONTENT)]
    s += [f"An image taken {w}" for w in words(URBAN_CONDITIONS)]
    s += [f"An image with {w}" for w in words(URBAN_QUALITY)]
    write(
        "urban_scenes",
        [
            "urban_scenes: failure causes for urban-scene models (driving, segmentation).",
            "Built by scripts/build_sentence_sets.py after the LBEE paper's appendix C.1 templates:",
            'scene content "An image of a ...", conditions "An image taken in/at ...",',
            'image quality and road state "An image with ...".',
        ],
        s,
    )


PLACES = """airfield|airplane cabin|airport terminal|alley|amphitheater|amusement arcade|amusement park|aquarium|
aqueduct|
arcade|arch|archaeological excavation|archive|army base|art gallery|art school|art studio|artists loft|assembly line|
athletic field|attic|auditorium|auto factory|auto showroom|badlands|bakery|balcony|ball pit|ballroom|bamboo forest|
bank vault|banquet hall|bar|barn|barndoor|baseball field|basement|basketball court|bathroom|bazaar|beach|beach house|
beauty salon|bedroom|beer garden|beer hall|berth|biology laboratory|boardwalk|boat deck|boathouse|bookstore|
botanical garden|bow window|bowling alley|boxing ring|bridge|building facade|bullring|burial chamber|bus interior|
bus station|butchers shop|butte|cabin|cafeteria|campsite|campus|canal|candy store|canyon|car interior|castle|catacomb|
cemetery|chalet|chemistry lab|childs room|church|classroom|clean room|cliff|closet|clothing store|coast|cockpit|
coffee shop|computer room|conference center|conference room|construction site|corn field|corral|corridor|cottage|
courthouse|courtyard|creek|crevasse|crosswalk|dam|delicatessen|department store|desert|desert road|diner|dining hall|
dining room|discotheque|doorway|dorm room|downtown|dressing room|driveway|drugstore|elevator|elevator lobby|
embassy|engine room|entrance hall|escalator|excavation|fabric store|farm|fastfood restaurant|field|fire escape|
fire station|fishpond|flea market|florist shop|food court|football field|forest|forest path|forest road|formal garden|
fountain|galley|garage|gas station|gazebo|general store|gift shop|glacier|golf course|greenhouse|grotto|gymnasium|
hangar|harbor|hardware store|hayfield|heliport|highway|home office|home theater|hospital|hospital room|hot spring|
hotel room|house|hunting lodge|ice cream parlor|ice floe|ice shelf|ice skating rink|iceberg|igloo|industrial area|
inn|islet|jacuzzi|jail cell|japanese garden|jewelry shop|junkyard|kasbah|kennel|kindergarden classroom|kitchen|
lagoon|lake|landfill|landing deck|laundromat|lawn|lecture room|legislative chamber|library|lighthouse|living room|
loading dock|lobby|lock chamber|locker room|mansion|manufactured home|market|marsh|martial arts gym|mausoleum|medina|
mezzanine|moat|mosque|motel|mountain|mountain path|mountain snowy|movie theater|museum|music studio|
natural history museum|
nursery|nursing home|oast house|ocean|office|office building|office cubicles|oilrig|operating room|orchard|
orchestra pit|
pagoda|palace|pantry|park|parking garage|parking lot|pasture|patio|pavilion|pet shop|pharmacy|phone booth|
physics laboratory|
picnic area|pier|pizzeria|playground|playroom|plaza|pond|porch|promenade|pub|racecourse|raceway|raft|railroad track|
rainforest|reception|recreation room|repair shop|residential neighborhood|restaurant|restaurant kitchen|
restaurant patio|
rice paddy|river|rock arch|roof garden|rope bridge|ruin|runway|sandbox|sauna|schoolhouse|science museum|server room|
shed|shoe shop|shopfront|shopping mall|shower|ski resort|ski slope|sky|skyscraper|slum|snowfield|soccer field|stable|
stadium|stage|staircase|storage room|street|subway station|supermarket|sushi bar|swamp|swimming hole|swimming pool|
synagogue|television room|television studio|temple|throne room|ticket booth|topiary garden|tower|toyshop|train interior|
train station|tree farm|tree house|trench|tundra|underwater scene|utility room|valley|vegetable garden|
veterinarians office|
viaduct|village|vineyard|volcano|volleyball court|waiting room|water park|water tower|waterfall|watering hole|wave|
wet bar|wheat field|wind farm|windmill|yard|youth hostel|zen garden"""

IMAGE_TYPES = """a photo|a black and white photo|a drawing|a sketch|a painting|a cartoon|a 3D rendering|a sculpture|
a toy version of the object|an embroidery|a tattoo|a plush toy|an origami|a video game scene|a close-up photo|
a photo taken from far away|a photo taken from above|a photo taken from below|a cropped photo|
a photo of several objects|
a photo with text on it|a screenshot|an X-ray style image|an infrared photo|a collage"""
IMAGE_QUALITY = """a blurry image|an image with motion blur|an out-of-focus image|a noisy image|
an image with JPEG compression artifacts|
a low resolution image|a pixelated image|an overexposed image|an underexposed image|a dark image|a bright image|
a low contrast image|a high contrast image|an image with a watermark|an image with a frame|
an image with color distortion|
a grayscale image|a sepia image|an image with lens flare|an image with a fisheye distortion|an image with occlusion|
an image where the object is partly hidden|an image where the object is tiny|an image where the object is cut off|
an image with a cluttered background|an image with a plain background|an image with a person holding the object|
an image with many people|an image with reflections|an image with strong shadows"""
WEATHER = """at night|in the evening|at dawn|at sunset|in the rain|in the snow|in the fog|in a storm|on a sunny day|
on a cloudy day|in winter|in autumn|in summer|in spring|under water|in the dark|in dim light|under artificial light|
in bright sunlight|indoors|outdoors"""


def imagenet():
    from torchvision.models import ResNet50_Weights

    classes = list(ResNet50_Weights.IMAGENET1K_V1.meta["categories"])
    # ImageNet repeats two names; keep both classes distinct.
    fixes = {
        134: "crane bird",
        517: "construction crane",
        638: "maillot",
        639: "tank suit",
        264: "Cardigan Welsh corgi",
        474: "cardigan sweater",
    }
    counts = {}
    s = []
    for i, c in enumerate(classes):
        name = fixes.get(i, c)
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
        if counts[name.lower()] > 1:
            name = f"{name} (class {i})"
        s.append(f"An image of {an(name)}")
    s += [f"An image taken at {an(p)}" for p in words(PLACES)]
    s += [f"An image that is {w}" for w in words(IMAGE_TYPES)]
    s += [w[0].upper() + w[1:] for w in words(IMAGE_QUALITY)]
    s += [f"An image taken {w}" for w in words(WEATHER)]
    write(
        "imagenet",
        [
            "imagenet: per-class failure analysis of ImageNet-1K classifiers (LBEE app. A, C.1).",
            'Built by scripts/build_sentence_sets.py: the 1000 class names as "An image of a <class>"',
            "(torchvision metadata; the first 1000 lines, in class-index order), Places365-style places as",
            '"An image taken at <place>", then image type, image quality and weather sentences.',
        ],
        s,
    )


NICO_CLASSES = {
    "mammal": ["dog", "cat", "horse", "cow", "sheep", "bear", "lion", "monkey"],
    "bird": ["eagle", "owl", "parrot", "duck", "penguin", "ostrich"],
    "plant": ["cactus", "flower", "sunflower", "tree", "mushroom", "corn"],
    "airway": ["airplane", "helicopter", "hot air balloon", "kite"],
    "landway": ["car", "bicycle", "train", "motorcycle", "truck", "bus"],
    "waterway": ["boat", "ship", "sailboat", "canoe", "submarine"],
}
NICO_CONTEXTS = {
    "dim lighting": "in dim lighting",
    "outdoor": "outdoors",
    "grass": "on the grass",
    "rock": "on the rocks",
    "autumn": "in autumn",
    "water": "in the water",
}


def nico():
    s = [f"A photo of {an(c)}" for c in NICO_CLASSES]
    s += [f"A photo taken {v}" for v in NICO_CONTEXTS.values()]
    s += [f"A photo of {an(c)} {v}" for c in NICO_CLASSES for v in NICO_CONTEXTS.values()]
    s += [f"A photo of {an(sub)}" for subs in NICO_CLASSES.values() for sub in subs]
    picks = [
        ("dog", "on the grass"),
        ("cat", "in dim lighting"),
        ("horse", "in the water"),
        ("cow", "on the rocks"),
        ("eagle", "on the rocks"),
        ("owl", "in dim lighting"),
        ("duck", "in the water"),
        ("penguin", "on the grass"),
        ("cactus", "in the water"),
        ("flower", "in autumn"),
        ("sunflower", "in dim lighting"),
        ("tree", "on the rocks"),
        ("airplane", "on the grass"),
        ("helicopter", "in the water"),
        ("kite", "in autumn"),
        ("car", "in the water"),
        ("bicycle", "on the rocks"),
        ("train", "in autumn"),
        ("truck", "in dim lighting"),
        ("boat", "on the grass"),
        ("ship", "on the rocks"),
        ("sailboat", "in autumn"),
        ("canoe", "in dim lighting"),
        ("mushroom", "on the grass"),
        ("bear", "in the water"),
        ("lion", "on the grass"),
        ("sheep", "in autumn"),
        ("parrot", "in dim lighting"),
        ("motorcycle", "in the water"),
        ("bus", "on the grass"),
        ("dog", "in the water"),
        ("cat", "on the rocks"),
        ("horse", "in autumn"),
        ("cow", "in dim lighting"),
        ("owl", "outdoors"),
        ("eagle", "in the water"),
        ("ostrich", "in autumn"),
        ("penguin", "on the rocks"),
        ("corn", "in the water"),
        ("cactus", "in dim lighting"),
        ("tree", "in the water"),
        ("hot air balloon", "in dim lighting"),
        ("airplane", "in the water"),
        ("kite", "on the rocks"),
        ("train", "in the water"),
        ("bicycle", "in dim lighting"),
        ("submarine", "on the grass"),
        ("canoe", "on the rocks"),
        ("ship", "in autumn"),
        ("monkey", "in the water"),
    ]
    s += [f"A photo of {an(a)} {b}" for a, b in picks]
    write(
        "nico",
        [
            "nico: NICO++-style classification with spurious class-context correlations (LBEE app. A, C.1).",
            "Built by scripts/build_sentence_sets.py: the six classes, the six contexts, every class x context",
            'pair "A photo of a <class> <context>", sub-classes, and sub-class x context pairs',
            '("A photo of a cactus in the water").',
        ],
        s,
    )


COND_WEATHER = """a sunny weather|a cloudy weather|an overcast weather|a rainy weather|a drizzle|a heavy rain|
a thunderstorm|
a snowy weather|a snowstorm|a blizzard|a foggy weather|a misty weather|a hazy weather|a windy weather|a sandstorm|
a hailstorm|a dull weather|a freezing weather|a hot weather|a humid weather"""
COND_LIGHT = """at night|at dusk|at dawn|at sunrise|at sunset|at noon|in the morning|in the afternoon|in the evening|
at twilight|in bright sunlight|in harsh light|in soft light|in dim light|in the dark|under street lights|
under artificial light|under neon lights|under candle light|with backlighting|against the sun|in the shade|
with strong shadows|with a flash|by moonlight"""
COND_SEASON = """in winter|in spring|in summer|in autumn|in the dry season|in the rainy season|during a holiday|
during a festival"""
COND_QUALITY = """motion blur|defocus blur|camera shake|sensor noise|grain|salt-and-pepper noise|
JPEG compression artifacts|
low resolution|pixelation|overexposure|underexposure|low contrast|high contrast|saturated colors|washed-out colors|
a color cast|a blue tint|a yellow tint|lens flare|chromatic aberration|vignetting|barrel distortion|
a fisheye distortion|rolling shutter artifacts|interlacing artifacts|a watermark|a timestamp overlay|text overlay|
a black border|a cropped frame|rain drops on the lens|a dirty lens|a fogged lens|a scratched lens|glare|
reflections|moire patterns|banding|a blown-out sky|crushed shadows|an unusual aspect ratio|a tilted horizon|
a partially occluded subject|a cluttered background|a plain background|a busy foreground|a tiny subject|
a subject cut off by the frame|a subject far away|a subject very close to the camera"""
COND_VIEW = """from above|from below|from the side|from behind|from the front|from far away|at close range|
from a low angle|from a high angle|from a bird's-eye view|from a drone|from a moving vehicle|from a dashboard camera|
from a security camera|from a handheld phone|through a window|through a fence|in a mirror|with a wide-angle lens|
with a telephoto lens|with a macro lens|in portrait orientation|in landscape orientation|as a panorama|
with an unusual angle|upside down|with a rotated frame|through glass|through water|through smoke"""
COND_PLACE = """indoors|outdoors|in a city|in the countryside|in a forest|in a desert|in the mountains|at the beach|
on the water|under water|in the snow|on a road|in a tunnel|in a parking lot|in a field|in a garden|in a kitchen|
in a living room|in an office|in a factory|in a shop|in a crowd|in an empty place|in a studio|in a laboratory|
in a hospital|in a stadium|in a market|on a bridge|in a cave"""


def conditions():
    s = [f"An image taken in {w}" for w in words(COND_WEATHER)]
    s += [f"An image taken {w}" for w in words(COND_LIGHT)]
    s += [f"An image taken {w}" for w in words(COND_SEASON)]
    s += [f"An image with {w}" for w in words(COND_QUALITY)]
    s += [f"An image taken {w}" for w in words(COND_VIEW)]
    s += [f"An image taken {w}" for w in words(COND_PLACE)]
    s += [
        "A black and white image",
        "A drawing",
        "A painting",
        "A cartoon",
        "A 3D rendering",
        "A screenshot",
        "A photo of a printed photo",
        "A photo of a screen",
        "An infrared image",
        "A thermal image",
        "A medical scan",
        "A satellite image",
        "An aerial photo",
        "A microscope image",
        "A synthetic image",
    ]
    write(
        "conditions",
        [
            "conditions: generic capture conditions, task-independent (weather, lighting, season, image",
            "quality, viewpoint, place, image type). Built by scripts/build_sentence_sets.py with the",
            'LBEE templates "An image taken in/at ..." and "An image with ...".',
        ],
        s,
    )


def spotcheck():
    from lbee.spotcheck import spotcheck_sentences

    write(
        "spotcheck",
        [
            "spotcheck: sentences about SpotCheck renders (SpotCheck app. A.1 attributes).",
            "Built by scripts/build_sentence_sets.py from lbee.spotcheck.spotcheck_sentences(), which maps",
            "each sentence to the attribute conditions that make it true, so relevance is exact.",
        ],
        [s for s, _, _ in spotcheck_sentences()],
    )


def rival10():
    from lbee.rival10 import rival10_sentences

    write(
        "rival10",
        [
            "rival10: RIVAL10's 18 object attributes, then its 10 classes (RIVAL10 §3, app. A).",
            "Built by scripts/build_sentence_sets.py from lbee.rival10.rival10_sentences(): line j < 18 is",
            "column j of <stem>_attr_labels.npy (long-snout ... patterned), line 18 + c is class c (truck ... bird),",
            "so lbee.rival10 gives exact relevance on real images.",
        ],
        rival10_sentences(),
    )


if __name__ == "__main__":
    rival10()
    spotcheck()
    urban_scenes()
    imagenet()
    nico()
    conditions()
